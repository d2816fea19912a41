"""Render an environment's files from the model: one Jinja2 Environment, pure context builders.

    from clusterforge.render import render, render_environment, write_tree

    files = render_environment(index, "lab")           # {relative path: text}, pure
    result = render(index, "lab", svg=True)            # + kinds, placeholder GUIDs, notes, SVG
    report = write_tree(Path("out/lab"), result.files) # atomic writes, stale files removed

Everything outside `render/` imports it from here (tests/unit/test_layers.py holds it so): the deploy, day-2,
the rehearsal, sim and the CLI take the file specs, the places and the few names of the rendered files they
manage from this face, never from the context builders behind it.
"""

from ..util.hostlist import compress as hostlist
from .context_monitoring import (
    ALERTMANAGER_CLUSTER_PORT,
    ALERTMANAGER_PORT,
    DCGM_EXPORTER_PORT,
    DRAIN_HOOK,
    DRAIN_TARGETS,
    GPU_ONLY,
    IB_HEALTH,
    STORE_PORT,
    TELEGRAF_TEMPLATE,
    drain_hook_config,
    monitoring_files,
)
from .context_monitoring import servers as monitoring_servers
from .context_opensm import install_path, plane_services
from .core import (
    Rendered,
    banner,
    file_context,
    file_specs,
    host_file_specs,
    render,
    render_environment,
    render_spec,
    render_text,
)
from .fabric import FabricView
from .guids import PLACEHOLDER_PREFIX, GuidBook, is_placeholder
from .guids import fmt as guid_text
from .node_exporter import PORT as NODE_EXPORTER_PORT
from .node_exporter import dropin_path as node_exporter_dropin
from .nodecheck import PATH as NODECHECK_PATH
from .nodecheck import healthcheck_lines, nodecheck_files
from .spec import FileSpec
from .writer import WriteReport, file_mode, write_tree

__all__ = [
    "ALERTMANAGER_CLUSTER_PORT", "ALERTMANAGER_PORT", "DCGM_EXPORTER_PORT", "DRAIN_HOOK", "DRAIN_TARGETS", "GPU_ONLY",
    "IB_HEALTH", "NODECHECK_PATH", "NODE_EXPORTER_PORT",
    "PLACEHOLDER_PREFIX", "STORE_PORT", "TELEGRAF_TEMPLATE", "FabricView", "FileSpec", "GuidBook", "Rendered",
    "WriteReport", "banner", "drain_hook_config", "file_context", "file_mode", "file_specs", "guid_text",
    "healthcheck_lines", "host_file_specs", "hostlist", "install_path", "is_placeholder", "monitoring_files",
    "monitoring_servers", "node_exporter_dropin", "nodecheck_files", "plane_services", "render", "render_environment",
    "render_spec", "render_text", "write_tree",
]
