"""`deploy --engine ansible`: the same plans, run by ansible-playbook with the roles in roles/."""

from __future__ import annotations

from pathlib import Path

from .ansible import run_playbook
from .api import DeployOutcome, DeployRequest, run_engine


def deploy_ansible(env: Path, req: DeployRequest) -> DeployOutcome:
    return run_engine(env, req, "ansible", lambda plans, ssh: DeployOutcome(run_playbook(
        plans, ssh, dry_run=req.dry_run, batch=req.batch, max_fail_percent=req.max_fail_percent)[0]))
