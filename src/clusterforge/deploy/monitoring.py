"""The `monitoring` component: the rendered monitoring files, packages and units, per host (issue #11).

From `render.monitoring_files` (the same files `render` writes under out/<env>/monitoring):

* every node, exporters path: Debian's `prometheus-node-exporter` with the rendered ARGS (infiniband and
  textfile collectors); telegraf path: `telegraf` pinned (`software.telegraf`, the site's InfluxData
  repository) with the node's rendered telegraf.conf;
* GPU nodes (both paths: Telegraf scrapes the local dcgm-exporter): `dcgm-exporter` pinned
  (`software.dcgm_exporter`) with the rendered counters file and unit;
* monitoring servers: Debian's `victoria-metrics` (the store; vmagent and vmalert come in the same package)
  and `prometheus-alertmanager`, their /etc/default ARGS, rules.yml, alertmanager.yml, scrape.yml, the
  clusterforge-vmalert / clusterforge-vmagent units, and the level 3 drain hook (a standalone Python script,
  its {host: argv} JSON and its unit) when the inventory drains.

Every unit is enabled and started; a changed file restarts (or, for a file its program re-reads on SIGHUP,
reloads) exactly the unit it configures (`ManagedFile.unit`, the `units` handler).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..render import (
    DRAIN_HOOK,
    DRAIN_TARGETS,
    GPU_ONLY,
    IB_HEALTH,
    TELEGRAF_TEMPLATE,
    FabricView,
    file_context,
    file_mode,
    monitoring_files,
    monitoring_servers,
    render_text,
)
from .component import Component, ManagedFile
from .options import DeployOptions
from .packages import TELEGRAF_PACKAGE, Pin, dcgm_pins, telegraf_pins

if TYPE_CHECKING:
    from ..model.index import Index


IB_HEALTH_TIMER = "clusterforge-ib-health.timer"
"""Runs ib-health into the textfile directory (exporters path; Telegraf's exec input runs it itself)."""

UNIT_OF: dict[str, tuple[str, bool]] = {
    "/etc/default/prometheus-node-exporter": ("prometheus-node-exporter", False),
    "/etc/dcgm-exporter/clusterforge-counters.csv": ("dcgm-exporter", False),
    "/etc/systemd/system/dcgm-exporter.service": ("dcgm-exporter", False),
    "/etc/telegraf/telegraf.conf": ("telegraf", False),
    "/etc/default/victoria-metrics": ("victoria-metrics", False),
    "/etc/default/prometheus-alertmanager": ("prometheus-alertmanager", False),
    "/etc/prometheus/alertmanager.yml": ("prometheus-alertmanager", True),
    "/etc/clusterforge/monitoring/rules.yml": ("clusterforge-vmalert", True),
    "/etc/clusterforge/monitoring/scrape.yml": ("clusterforge-vmagent", True),
    "/etc/systemd/system/clusterforge-vmalert.service": ("clusterforge-vmalert", False),
    "/etc/systemd/system/clusterforge-vmagent.service": ("clusterforge-vmagent", False),
    "/etc/systemd/system/clusterforge-drain-hook.service": ("clusterforge-drain-hook", False),
    DRAIN_HOOK: ("clusterforge-drain-hook", False),
    DRAIN_TARGETS: ("clusterforge-drain-hook", False),
    "/etc/systemd/system/clusterforge-ib-health.service": (IB_HEALTH_TIMER, False),
    "/etc/systemd/system/clusterforge-ib-health.timer": (IB_HEALTH_TIMER, False),
}
"""Destination -> (the unit it configures, reloaded rather than restarted: the program re-reads it on SIGHUP)."""

SERVER_PACKAGES = ("victoria-metrics", "prometheus-alertmanager")
"""Debian 12's: the store, vmagent and vmalert in one package; Alertmanager."""
NODE_EXPORTER = "prometheus-node-exporter"
TELEGRAF = TELEGRAF_PACKAGE
EXECUTABLE = (DRAIN_HOOK, IB_HEALTH)


def monitoring_components(index: Index, options: DeployOptions, *, render: bool = True) -> dict[str, Component]:
    """node -> its `monitoring` component (none without a `monitoring` section)."""
    mon = index.inv.monitoring
    if mon is None:
        return {}
    specs = monitoring_files(FabricView(index))
    extra = file_context({}, options.env_name)
    root = options.root.rstrip("/")

    def managed(dest: str, template: str, context: Mapping[str, Any]) -> ManagedFile:
        full = {**context, **extra}
        text = render_text(template, full) if render else ""
        unit, reload = UNIT_OF.get(dest, ("", False))
        mode = 0o755 if dest in EXECUTABLE else file_mode(dest.lstrip("/"))
        return ManagedFile(f"{root}{dest}", template, full, text, mode, unit=unit, reload=reload)

    on_nodes: list[ManagedFile] = []
    by_server: dict[str, list[ManagedFile]] = {}
    telegraf_conf: dict[str, ManagedFile] = {}
    stores = monitoring_servers(index, mon)
    for spec in specs:  # where each goes is its builder's word (spec.host, spec.dest)
        if not spec.dest:
            continue
        if spec.template == TELEGRAF_TEMPLATE:  # a node's own collector configuration
            telegraf_conf[spec.host] = managed(spec.dest, spec.template, spec.context)
        elif not spec.host:  # rendered once, on every node
            on_nodes.append(managed(spec.dest, spec.template, spec.context))
        elif spec.host in stores:
            by_server.setdefault(spec.host, []).append(managed(spec.dest, spec.template, spec.context))

    sw = index.inv.software
    exporters = mon.collector == "exporters"
    gpu_pins = tuple(dcgm_pins(sw))
    tg_pins = tuple(telegraf_pins(sw))
    out: dict[str, Component] = {}
    for node in index.inv.nodes:
        hw = index.hardware[node.name]
        gpus = hw.gpus is not None and hw.gpus.count > 0
        files = [f for f in on_nodes if gpus or not f.dest.endswith(GPU_ONLY)]
        pins: list[Pin] = []
        packages: list[str] = []
        services: list[str] = []
        problems: list[str] = []
        if exporters:
            packages.append(NODE_EXPORTER)
            services += [NODE_EXPORTER, IB_HEALTH_TIMER]
        else:
            if node.name in telegraf_conf:
                files.append(telegraf_conf[node.name])
            pins += tg_pins
            services.append(TELEGRAF)
            if not tg_pins:
                problems.append("the telegraf collector needs software.telegraf (the version to install from "
                                "the site's InfluxData repository)")
        if gpus:
            pins += gpu_pins
            services.append("dcgm-exporter")
            if not gpu_pins:
                problems.append("GPU nodes need software.dcgm_exporter (NVIDIA's dcgm-exporter version to pin)")
        if node.name in by_server:
            files += by_server[node.name]
            packages += SERVER_PACKAGES
            services += ["victoria-metrics", "prometheus-alertmanager", *sorted(
                {f.unit for f in by_server[node.name] if f.unit.startswith("clusterforge-")})]
        out[node.name] = Component("monitoring", tuple(files), tuple(pins), packages=tuple(packages),
                                   services=tuple(services), handler="units", problems=tuple(problems))
    return out

