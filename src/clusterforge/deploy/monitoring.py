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

from ..collect.plan import family_of
from ..render import (
    ALERTMANAGER_CLUSTER_PORT,
    ALERTMANAGER_PORT,
    DCGM_EXPORTER_PORT,
    DRAIN_HOOK,
    DRAIN_TARGETS,
    GPU_ONLY,
    IB_HEALTH,
    NODE_EXPORTER_PORT,
    STORE_PORT,
    TELEGRAF_TEMPLATE,
    FabricView,
    file_context,
    file_mode,
    monitoring_files,
    monitoring_servers,
    node_exporter_dropin,
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
"""Destination -> (the unit it configures, reloaded rather than restarted: the program re-reads it on SIGHUP).
node_exporter's files (its settings, EL's drop-in) configure the unit of the node's family (catalog/os.yaml)."""

SERVER_SERVICES = ("victoria-metrics", "prometheus-alertmanager")
"""The store (vmagent and vmalert come in its package) and Alertmanager: Debian 12's packages
(catalog/os.yaml `monitoring_server`)."""
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

    cat = index.cat.os
    ne_unit: dict[str, str] = {}  # node_exporter's files of every family -> that family's unit
    for ne in (fam.node_exporter for fam in cat.families.values()):
        ne_unit[ne.settings] = ne_unit[node_exporter_dropin(ne.unit)] = ne.unit

    def managed(dest: str, template: str, context: Mapping[str, Any]) -> ManagedFile:
        full = {**context, **extra}
        text = render_text(template, full) if render else ""
        unit, reload = (ne_unit[dest], False) if dest in ne_unit else UNIT_OF.get(dest, ("", False))
        mode = 0o755 if dest in EXECUTABLE else file_mode(dest.lstrip("/"))
        return ManagedFile(f"{root}{dest}", template, full, text, mode, unit=unit, reload=reload)

    on_nodes: list[tuple[ManagedFile, tuple[str, ...]]] = []  # (file, the families that get it; () every one)
    by_server: dict[str, list[ManagedFile]] = {}
    telegraf_conf: dict[str, ManagedFile] = {}
    stores = monitoring_servers(index, mon)
    for spec in specs:  # where each goes is its builder's word (spec.host, spec.dest)
        if not spec.dest:
            continue
        if spec.template == TELEGRAF_TEMPLATE:  # a node's own collector configuration
            telegraf_conf[spec.host] = managed(spec.dest, spec.template, spec.context)
        elif not spec.host:  # rendered once, on every node
            on_nodes.append((managed(spec.dest, spec.template, spec.context), spec.families))
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
        family = family_of(index, node.name)
        files = [f for f, fams in on_nodes if (gpus or not f.dest.endswith(GPU_ONLY)) and (not fams or family in fams)]
        pins: list[Pin] = []
        packages: list[str] = []
        ports: list[tuple[str, str]] = []  # what the monitoring server's vmagent and its peers reach
        services: list[str] = []
        problems: list[str] = []
        if exporters:
            packages += cat.package_names(family, "node_exporter")
            services += [cat.families[family].node_exporter.unit, IB_HEALTH_TIMER]
            ports.append((f"{NODE_EXPORTER_PORT}/tcp", "node_exporter"))
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
            if exporters:  # scraped by vmagent (Telegraf reads it on the node itself)
                ports.append((f"{DCGM_EXPORTER_PORT}/tcp", "dcgm-exporter"))
            if not gpu_pins:
                problems.append("GPU nodes need software.dcgm_exporter (NVIDIA's dcgm-exporter version to pin)")
        if node.name in by_server:
            files += by_server[node.name]
            if "monitoring_server" in cat.packages[family]:
                packages += cat.package_names(family, "monitoring_server")
            else:
                problems.append("a monitoring server runs Debian 12 here: the store and Alertmanager are Debian's "
                                f"packages (victoria-metrics, prometheus-alertmanager), none named for {family} "
                                "(catalog/os.yaml; docs/os.md)")
            ports += [(f"{STORE_PORT}/tcp", "victoria-metrics"), (f"{ALERTMANAGER_PORT}/tcp", "alertmanager")]
            if len(stores) > 1:  # the Alertmanagers' cluster (gossip over TCP and UDP)
                ports += [(f"{ALERTMANAGER_CLUSTER_PORT}/tcp", "alertmanager cluster"),
                          (f"{ALERTMANAGER_CLUSTER_PORT}/udp", "alertmanager cluster")]
            services += [*SERVER_SERVICES, *sorted(
                {f.unit for f in by_server[node.name] if f.unit.startswith("clusterforge-")})]
        out[node.name] = Component("monitoring", tuple(files), tuple(pins), packages=tuple(packages),
                                   services=tuple(services), handler="units", problems=tuple(problems),
                                   ports=tuple(ports))
    return out

