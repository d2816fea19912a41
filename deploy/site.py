"""Every component, in dependency order, on the hosts that need it (pyinfra CLI entry point).

Each component adds one operation per action it has on the host, named for what it does
(`nccl: packages (libnccl2=..., ...)`, `opensm: files (/etc/opensm/opensm.conf, ...)`); see
clusterforge.deploy.ops. `host.loop` keeps each component's place in pyinfra's operation order
the same on every host, whether or not a host has the component.
"""

from pyinfra import host

from clusterforge.deploy.component import RETIRE
from clusterforge.deploy.desired import COMPONENTS
from clusterforge.deploy.ops import check_os, deploy_component

plan = host.data.cf_plan
check_os(plan)  # a host that is not the declared OS gets no operation at all
for component in host.loop((RETIRE, *COMPONENTS)):  # first: what the host no longer wants (deploy/retire.py)
    deploy_component(plan, component)
