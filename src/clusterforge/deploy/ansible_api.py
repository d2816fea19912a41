"""`deploy --engine ansible`: the same plans, run by ansible-playbook with the roles in roles/."""

from __future__ import annotations

import time
from pathlib import Path

from ..api import load_checked
from ..lab import read_state
from .ansible import run_playbook
from .api import DeployError, DeployOutcome, DeployRequest, lab_session, plans_for, ssh_from_inventory
from .lablink import lab_plans, lab_ssh


def deploy_ansible(env: Path, req: DeployRequest) -> DeployOutcome:
    start = time.monotonic()
    index = load_checked(env).index
    if req.lab_state is not None:
        state = read_state(req.lab_state)
        if state is None:
            raise DeployError(f"no lab recorded in {req.lab_state}: start it first")
        with lab_session(state, index) as mirror:
            plans = lab_plans(plans_for(env, req, mirror, index), state)
            results, _ = run_playbook(plans, req.ssh or lab_ssh(state), dry_run=req.dry_run, batch=req.batch,
                                      max_fail_percent=req.max_fail_percent)
    else:
        plans = list(plans_for(env, req, None, index).values())
        results, _ = run_playbook(plans, req.ssh or ssh_from_inventory(env, index), dry_run=req.dry_run,
                                  batch=req.batch, max_fail_percent=req.max_fail_percent)
    return DeployOutcome(results, seconds=time.monotonic() - start)
