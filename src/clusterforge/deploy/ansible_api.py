"""`deploy --engine ansible`: the same plans, run by ansible-playbook with the roles in roles/."""

from __future__ import annotations

import time
from pathlib import Path

from ..api import load_checked
from .ansible import run_playbook
from .api import DeployOutcome, DeployRequest, deploy_targets, keep_record


def deploy_ansible(env: Path, req: DeployRequest) -> DeployOutcome:
    start = time.monotonic()
    index = load_checked(env).index
    with deploy_targets(env, req, index) as (plans, ssh):
        results = run_playbook(plans, ssh, dry_run=req.dry_run, batch=req.batch,
                               max_fail_percent=req.max_fail_percent)[0] if plans else []
    keep_record(env, req, plans, results, "ansible")
    return DeployOutcome(results, seconds=time.monotonic() - start)
