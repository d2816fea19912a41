"""deploy: install and configure every component of the cluster from the model (docs/deploy.md).

    from clusterforge.deploy import DeployRequest, deploy, host_plans

    outcome = deploy(Path("inventories/lab"), DeployRequest(dry_run=True))   # or stage=: a rehearsal's hosts
    outcome.results      # one HostResult per host: status, changes (with diffs), error, reboot
    outcome.exit_code    # 0; 1 when a host failed, 5 when one was unreachable

Layers: `desired` (model -> HostPlan, pure), `facts` (one probe per host, pure parser),
`changes` (facts in -> changes and commands out, pure), `runner` (pyinfra API, per-host
isolation), `ansible` (same plans as Ansible's inventory + roles/), `report` (results folded by outcome into
node sets, the plan file, JUnit). A rehearsal's hosts and repository come from the caller (`stage`:
rehearsal/stage.py); deploy imports no lab.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import DeployError, DeployOutcome, DeployRequest, deploy, select_hosts
    from .component import Component, HostPlan, ManagedFile
    from .desired import host_plans
    from .options import DeployOptions, Mirror
    from .runner import HostResult, SshSettings, run_deploy

# Imported on first use (PEP 562): a command that needs one name of the package must not
# import pyinfra and paramiko (0.4 s) for that.
_LAZY = {
    "DeployError": "api", "DeployOutcome": "api", "DeployRequest": "api", "deploy": "api", "select_hosts": "api",
    "Component": "component", "HostPlan": "component", "ManagedFile": "component", "host_plans": "desired",
    "DeployOptions": "options", "Mirror": "options",
    "HostResult": "runner", "SshSettings": "runner", "run_deploy": "runner",
}
__all__ = [
    "Component", "DeployError", "DeployOptions", "DeployOutcome", "DeployRequest", "HostPlan", "HostResult",
    "ManagedFile", "Mirror", "SshSettings", "deploy", "host_plans", "run_deploy", "select_hosts",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
