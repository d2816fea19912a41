"""pyinfra inventory from the model: `CLUSTERFORGE_ENV=inventories/lab pyinfra deploy/inventory.py deploy/site.py`.

Prefer `clusterforge deploy`: it isolates hosts (one host's lost connection does not abort the run),
batches, writes the plan file and the per-host summary. This entry point is for pyinfra's own CLI.
With a lab up for the environment (`clusterforge lab up`), the hosts are its containers (lab key,
lab known_hosts). The lab's stand-in package repository is served by `clusterforge deploy` only:
with pyinfra's CLI, use it for dry runs and file changes on a lab that was deployed once.
"""

import os
from pathlib import Path

from clusterforge.api import load_checked
from clusterforge.deploy.api import DeployRequest, plans_for, ssh_from_inventory
from clusterforge.deploy.runner import _host_data
from clusterforge.rehearsal import env as labenv
from clusterforge.rehearsal.lablink import lab_plans, lab_ssh
from clusterforge.rehearsal.stage import lab_mirror

_env = Path(os.environ.get("CLUSTERFORGE_ENV", "inventories/lab"))
_index = load_checked(_env).index
_lab = labenv.running(_env)
if _lab is not None:
    _ssh = lab_ssh(_lab)
    _plans = lab_plans(plans_for(_env, DeployRequest(), lab_mirror(_lab), _index), _lab)
else:
    _ssh = ssh_from_inventory(_env, _index)
    _plans = list(plans_for(_env, DeployRequest(), None, _index).values())

cluster = [(plan.name, {**_host_data(plan, _ssh), "cf_plan": plan}) for plan in _plans]
