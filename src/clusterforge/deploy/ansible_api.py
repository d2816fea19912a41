"""`deploy --engine ansible`: the same plans, run by ansible-playbook with the roles in roles/."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .ansible import run_playbook
from .api import DeployOutcome, DeployRequest, run_engine
from .component import HostPlan
from .runner import HostResult, SshSettings


def deploy_ansible(env: Path, req: DeployRequest, progress: Callable[[HostResult], None] | None = None,
                   started: Callable[[int], None] | None = None) -> DeployOutcome:
    """The Ansible run; its results come from the play's final stats, so `progress` hears every host at the
    end (`started` the number of hosts first)."""
    def run(plans: list[HostPlan], ssh: SshSettings, parallel: int) -> DeployOutcome:
        results = run_playbook(plans, ssh, dry_run=req.dry_run, batch=req.batch, forks=parallel,
                               max_fail_percent=req.max_fail_percent)[0]
        if progress is not None:
            for r in results:
                progress(r)
        return DeployOutcome(results)

    return run_engine(env, req, "ansible", run, started)
