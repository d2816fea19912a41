"""The `healthcheck` component: Slurm's node health check (docs/health.md) on each compute node.

From `render.nodecheck_files` (the files `render` writes under out/<env>/slurm and hosts/<node>):

* /usr/local/lib/clusterforge/cf-nodecheck (0755), the same on every node;
* /etc/clusterforge/nodecheck.json, what this node must show;
* /etc/slurm/clusterforge-healthcheck.conf, the HealthCheck* lines the site's slurm.conf `Include`s.

No package and no unit: slurmd runs the program. Built from the whole model on both sides of a day-2 diff
(like monitoring), not from the host-file builders: its expectations read `software` (the driver pin), which
those never do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..render import NODECHECK_PATH, FabricView, nodecheck_files
from .component import Component, ManagedFile
from .options import DeployOptions

if TYPE_CHECKING:
    from ..model.index import Index



def healthcheck_components(index: Index, options: DeployOptions, *, render: bool = True) -> dict[str, Component]:
    """compute node -> its `healthcheck` component (none when `health_check.enabled` is false)."""
    from ..render import file_context, render_text

    extra = file_context({}, options.env_name)
    root = options.root.rstrip("/")
    shared: list[ManagedFile] = []
    per_node: dict[str, ManagedFile] = {}
    for spec in nodecheck_files(FabricView(index)):
        context = {**spec.context, **extra}
        text = render_text(spec.template, context) if render else ""
        if spec.host:  # the node's own expectations (its builder says where: CONFIG)
            per_node[spec.host] = ManagedFile(f"{root}{spec.dest}", spec.template, context, text, 0o644)
        elif spec.dest:  # every compute node's: the check itself (a program) and the Slurm lines
            mode = 0o755 if spec.dest == NODECHECK_PATH else 0o644
            shared.append(ManagedFile(f"{root}{spec.dest}", spec.template, context, text, mode))
    # slurmd runs the check: its port is what slurmctld reaches (opened where the family has a firewall)
    ports = ((f"{index.inv.health_check.slurmd_port}/tcp", "slurmd"),)
    return {node: Component("healthcheck", (*shared, f), ports=ports) for node, f in per_node.items()}
