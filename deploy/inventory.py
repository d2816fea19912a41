"""pyinfra inventory from the model: `CLUSTERFORGE_ENV=inventories/lab pyinfra deploy/inventory.py deploy/site.py`.

Prefer `clusterforge deploy`: it isolates hosts (one host's lost connection does not abort the run),
batches, writes the plan file and the per-host summary. This entry point is for pyinfra's own CLI.
"""

import os
from pathlib import Path

from clusterforge.api import load_checked
from clusterforge.deploy.api import DeployRequest, plans_for, ssh_from_inventory
from clusterforge.deploy.runner import _host_data

_env = Path(os.environ.get("CLUSTERFORGE_ENV", "inventories/lab"))
_index = load_checked(_env).index
_ssh = ssh_from_inventory(_env, _index)
_plans = plans_for(_env, DeployRequest(), None, _index)

cluster = [(name, {**_host_data(plan, _ssh), "cf_plan": plan}) for name, plan in _plans.items()]
