"""pyinfra inventory for the native-operations bench: the containers of the lab in $CF_BENCH_LAB_STATE
(lab key and known_hosts), each with its host plan (`cf_plan`) for the lab's stand-in repository.

The bench (bench/pyinfra_native_bench.py) serves that repository while pyinfra runs.
"""

import os
from pathlib import Path

from clusterforge.api import load_checked
from clusterforge.deploy.api import DeployRequest, plans_for
from clusterforge.deploy.runner import _host_data
from clusterforge.lab import read_state
from clusterforge.rehearsal.lablink import lab_plans, lab_ssh
from clusterforge.rehearsal.stage import lab_mirror

_env = Path(os.environ.get("CLUSTERFORGE_ENV", "inventories/lab"))
_state = read_state(Path(os.environ["CF_BENCH_LAB_STATE"]))
assert _state is not None, "no lab in $CF_BENCH_LAB_STATE"
_ssh = lab_ssh(_state)
_plans = lab_plans(plans_for(_env, DeployRequest(), lab_mirror(_state), load_checked(_env).index), _state)

cluster = [(plan.name, {**_host_data(plan, _ssh), "cf_plan": plan}) for plan in _plans]
