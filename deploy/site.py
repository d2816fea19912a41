"""Every component, in dependency order, on the hosts that need it (pyinfra CLI entry point)."""

from pyinfra import host

from clusterforge.deploy.desired import COMPONENTS
from clusterforge.deploy.ops import converge

plan = host.data.cf_plan
for component in COMPONENTS:
    if plan.component(component) is not None:
        converge(plan, component, name=f"clusterforge {component}")
