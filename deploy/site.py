"""Every component, in dependency order, on the hosts that need it (pyinfra CLI entry point).

Every host gets the same operations in the same order (pyinfra lines operations up across
hosts); a component a host does not have is a no-op there.
"""

from pyinfra import host

from clusterforge.deploy.desired import COMPONENTS
from clusterforge.deploy.ops import converge

plan = host.data.cf_plan
for component in COMPONENTS:
    converge(plan, component, name=f"clusterforge {component}")
