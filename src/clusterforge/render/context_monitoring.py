"""Monitoring: rules, Alertmanager's level routing, the collectors' configs and the labels from the model.

Every series carries `host`, `rack`, `u` (and `profile`, `role`); a series of an HCA port also
`rail`, `leaf`, `leaf_port`, `cable`, `a_end`, `b_end`, `lanes` (its trunk and patch panels) and
`speed` (the link's rate: the slower end's, e.g. `HDR`), so an alert says where the part is and the
fast error tier picks its link rate's threshold. On the exporters path vmagent adds them (target labels and a
per-host `metric_relabel_configs` keyed on the port's `device;port`); on the telegraf path
Telegraf does (`global_tags` and one `processors.override` per port).

Files (under out/<env>/):
  monitoring/<server>/etc/clusterforge/monitoring/rules.yml      vmalert -rule
  monitoring/<server>/etc/prometheus/alertmanager.yml            Alertmanager (Debian's path)
  monitoring/<server>/etc/clusterforge/monitoring/scrape.yml     vmagent -promscrape.config (exporters)
  monitoring/<server>/etc/default/victoria-metrics               the Debian unit's ARGS (retention, ...)
  monitoring/<server>/etc/default/prometheus-alertmanager        its ARGS (the cluster of several servers)
  monitoring/<server>/etc/systemd/system/clusterforge-{vmalert,vmagent}.service
  monitoring/<server>/usr/local/lib/clusterforge/drain-hook, .../etc/clusterforge/monitoring/drain-targets.json,
  monitoring/<server>/etc/systemd/system/clusterforge-drain-hook.service   the level 3 drain hook
  monitoring/nodes/dcgm-counters.csv, monitoring/nodes/dcgm-exporter.service   GPU nodes
  monitoring/nodes/prometheus-node-exporter                      every Debian/Ubuntu node's /etc/default (exporters)
  monitoring/nodes/el9/node_exporter{,.service.d/clusterforge.conf}   every EL9 node's (render/node_exporter)
  monitoring/nodes/usr/local/lib/clusterforge/ib-health          every node: SM, optics, Lustre (render/ib_health)
  monitoring/nodes/clusterforge-ib-health.{service,timer}        every node: ib-health into the textfile dir
  hosts/<node>/etc/telegraf/telegraf.conf                        every node (telegraf path)
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from ..model.hooks import ALERT_PREFIX, hook_argv
from ..model.index import Index
from ..model.monitoring import Monitoring
from ..model.nodes import Node
from ..model.place_text import route_text
from ..respond import level3
from . import ib_health
from .fabric import FabricView
from .monitoring_rules import rule_groups
from .node_exporter import PORT as NODE_EXPORTER_PORT
from .node_exporter import TEXTFILE_DIR, node_exporter_specs
from .spec import FileSpec, host_file, on_host

STORE_PORT = 8428
VMALERT_PORT = 8880
ALERTMANAGER_PORT = 9093
ALERTMANAGER_CLUSTER_PORT = 9094
DCGM_EXPORTER_PORT = 9400
CONF_DIR = "/etc/clusterforge/monitoring"
IB_HEALTH = ib_health.PATH
"""The exec input / textfile script: optic temperatures and each HCA port's BER, the master SM, the Lustre
client's imports (`cf_*` metrics; render/ib_health)."""
IB_HEALTH_EVERY_S = 60
DCGM_COUNTERS_FILE = "/etc/dcgm-exporter/clusterforge-counters.csv"
DCGM_EXPORTER_UNIT = "/etc/systemd/system/dcgm-exporter.service"
GPU_ONLY = (DCGM_COUNTERS_FILE, DCGM_EXPORTER_UNIT)
TELEGRAF_TEMPLATE = "monitoring/telegraf.conf.j2"
"""Where every GPU node (and only a GPU node) has the DCGM exporter's files."""
"""clusterforge-ib-health.timer (exporters path): one sminfo a minute per node."""
DRAIN_HOOK = "/usr/local/lib/clusterforge/drain-hook"
"""The drain hook on the monitoring node: a standalone Python script (nothing of clusterforge installed there)."""
DRAIN_TARGETS = f"{CONF_DIR}/drain-targets.json"
"""host -> the inventory's deploy.reboot.drain argv, read by the drain hook."""

DCGM_COUNTERS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory (HBM) temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter", "Total number of single-bit persistent ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter", "Total number of double-bit persistent ECC errors."),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors."),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors."),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed."),
    ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink flow-control CRC errors."),
    ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink data CRC errors."),
    ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink retries."),
    ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink recovery errors."),
    ("DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Throttling duration due to thermal constraints (in us)."),
)
"""dcgm-exporter's counters file: everything the rules read (several are commented out of its default file)."""

PORT_LABELS = ("rail", "leaf", "leaf_port", "cable", "a_end", "b_end", "lanes", "speed")


def _safe(value: str) -> str:
    """A label value that goes inside double quotes in YAML and TOML and into a relabel replacement."""
    if any(ch in value for ch in '"\\$') or not value.isprintable():
        raise ValueError(f"label value {value!r} cannot be written into a monitoring config")
    return value


def servers(index: Index, mon: Monitoring) -> list[str]:
    """The monitoring nodes: `servers`, or every node of `server_role`, in inventory order."""
    if mon.servers:
        return [n for n in mon.servers if n in index.nodes]
    return [n.name for n in index.inv.nodes if n.role == mon.server_role]


def host_labels(node: Node) -> dict[str, str]:
    out = {"host": node.name, "rack": node.rack, "u": str(node.u), "role": node.role}
    if node.profile:
        out["profile"] = node.profile
    return {k: _safe(v) for k, v in out.items()}


def port_labels(fab: FabricView, node: str) -> list[dict[str, Any]]:
    """Each InfiniBand port of the node's HCAs: its device, port and the labels from the model."""
    index = fab.index
    out: list[dict[str, Any]] = []
    for ca in fab.cas_by_node.get(node, []):
        for p in ca.ports:
            labels: dict[str, str] = {}
            if ca.rail is not None:
                labels["rail"] = str(ca.rail)
            hit = fab.peer.get((node, ca.name, p))
            if hit is not None:
                (far, far_hca, far_port), link = hit
                if far_hca is None:
                    labels["leaf"], labels["leaf_port"] = far, str(far_port)
                cable = link.cable
                labels.update(cable=cable.id, a_end=str(cable.a), b_end=str(cable.b))
                lanes = route_text(index, cable)
                if lanes:
                    labels["lanes"] = lanes
                if link.rate is not None:  # an end's rate unknown: no speed, no fast error tier for the port
                    labels["speed"] = link.rate
            out.append({"device": ca.name, "port": str(p), "labels": {k: _safe(v) for k, v in labels.items()}})
    return out


def _gpu_counts(index: Index) -> dict[str, int]:
    return {p.name: p.gpus.count for p in index.inv.profiles if p.gpus is not None and p.gpus.count > 0}


def link_speeds(fab: FabricView) -> list[str]:
    """The rates of the links in nodes' HCA and DPU ports (the `speed` labels port_labels gives), slowest first."""
    rates = fab.index.cat.rates
    found = {link.rate for link in fab.links if link.rate is not None
             and (link.cable.a.hca is not None or link.cable.b.hca is not None)}
    return sorted(found, key=lambda r: (rates[r].gbps if r in rates else 0, r))


def rules_context(fab: FabricView, mon: Monitoring) -> dict[str, Any]:
    index = fab.index
    profiles = sorted(index.profiles)
    return {"groups": rule_groups(mon, profiles, _gpu_counts(index), link_speeds(fab)), "collector": mon.collector}


def alertmanager_context(mon: Monitoring) -> dict[str, Any]:
    routes = mon.alerts
    email = routes.email
    page = routes.page
    hooks: list[str] = []
    if page is not None and page.webhook:
        hooks.append(page.webhook)
    if page is not None and page.drain:
        hooks.append(f"http://127.0.0.1:{page.drain_hook_port}/drain")
    return {
        "email": None if email is None else {
            "to": ", ".join(email.to), "sender": email.sender, "smarthost": email.smarthost,
            "require_tls": "true" if email.require_tls else "false",
        },
        "level3_hooks": hooks,
        "repeat_h": routes.repeat_h,
        "group_wait_s": routes.group_wait_s,
    }


@cache
def level3_source() -> str:
    """respond/level3.py as a Python literal, embedded verbatim in the drain hook (nothing of clusterforge is
    installed on the monitoring node)."""
    return repr(Path(str(level3.__file__)).read_text(encoding="utf-8"))


def drain_hook_config(index: Index, alertmanagers: list[str]) -> dict[str, Any] | None:
    """What the drain hook runs (respond/level3.py's config): each node's drain argv (`{reason}` left for the alert),
    whether its jobs move (compute nodes), the migration policy, the Alertmanagers its JobsMoved report goes to.
    None without a drain (alerts.page.drain false or no page)."""
    mon = index.inv.monitoring
    page = mon.alerts.page if mon is not None else None
    if page is None or not page.drain:
        return None
    argv = list(index.inv.deploy.reboot.drain)
    m = page.migrate
    return {
        "hosts": {n.name: {"drain": hook_argv(argv, n.name, None), "migrate": n.role == "compute"}
                  for n in index.inv.nodes},
        "reason": ALERT_PREFIX, "health_reason": f"{index.inv.health_check.reason_prefix}:",
        "migrate": None if m is None or m.how == "none" else m.model_dump(mode="json"),
        "alertmanagers": alertmanagers,
    }


def scrape_context(fab: FabricView, mon: Monitoring) -> dict[str, Any]:
    hosts = []
    for node in fab.index.inv.nodes:
        hw = fab.index.hardware[node.name]
        hosts.append({
            "host": node.name, "labels": host_labels(node), "gpus": hw.gpus is not None and hw.gpus.count > 0,
            "ports": port_labels(fab, node.name),
        })
    return {"interval_s": mon.interval_s, "timeout_s": max(1, mon.interval_s - 1), "hosts": hosts,
            "node_port": NODE_EXPORTER_PORT, "dcgm_port": DCGM_EXPORTER_PORT}


def telegraf_context(fab: FabricView, mon: Monitoring, node: Node, stores: list[str]) -> dict[str, Any]:
    hw = fab.index.hardware[node.name]
    labels = host_labels(node)
    return {
        "host": node.name, "tags": {k: v for k, v in labels.items() if k != "host"},
        "interval_s": mon.interval_s, "timeout_s": max(1, mon.interval_s - 1),
        "stores": [f"http://{s}:{STORE_PORT}" for s in stores],
        "influxdb_url": mon.influxdb_url if mon.store == "influxdb" else None,
        "gpus": hw.gpus is not None and hw.gpus.count > 0, "ib": bool(fab.cas_by_node.get(node.name)),
        "dcgm_url": f"http://127.0.0.1:{DCGM_EXPORTER_PORT}/metrics", "ib_health": IB_HEALTH,
        "ports": port_labels(fab, node.name),
    }


def monitoring_files(fab: FabricView) -> list[FileSpec]:
    index = fab.index
    mon = index.inv.monitoring
    if mon is None:
        return []
    stores = servers(index, mon)
    specs: list[FileSpec] = []
    rules = rules_context(fab, mon)
    am = alertmanager_context(mon)
    scrape = scrape_context(fab, mon) if mon.collector == "exporters" else None
    vm_args = {"retention_days": mon.retention_days, "port": STORE_PORT,
               "skip_single_field": mon.collector == "telegraf"}
    # several monitoring nodes: each vmalert notifies every Alertmanager, and the Alertmanagers form one
    # cluster (gossip on 9094) so that a notification goes out once
    notifiers = ([f"http://{s}:{ALERTMANAGER_PORT}" for s in stores] if len(stores) > 1
                 else [f"http://127.0.0.1:{ALERTMANAGER_PORT}"])
    units = {"store": f"http://127.0.0.1:{STORE_PORT}", "alertmanagers": notifiers,
             "vmalert_port": VMALERT_PORT, "conf_dir": CONF_DIR, "remote_write": list(mon.remote_write)}
    page = mon.alerts.page
    drain = None
    if page is not None and page.drain:
        drain = {"port": page.drain_hook_port, "script": DRAIN_HOOK, "targets": DRAIN_TARGETS,
                 "config": drain_hook_config(index, notifiers)}
    for srv in stores:  # each monitoring server's own files: rendered under monitoring/<server>/
        def server(dest: str, template: str, context: dict[str, Any], srv: str = srv) -> FileSpec:
            return on_host("monitoring", srv, dest, template, context)
        if drain is not None:
            specs.append(server(DRAIN_HOOK, "monitoring/drain-hook.py.j2",
                                {"port": drain["port"], "source": level3_source()}))
            specs.append(server(DRAIN_TARGETS, "monitoring/drain-targets.json.j2",
                                {"json": json.dumps(drain["config"], indent=1, sort_keys=True)}))
            specs.append(server("/etc/systemd/system/clusterforge-drain-hook.service",
                                "monitoring/drain-hook.service.j2",
                                {k: drain[k] for k in ("port", "script", "targets")}))
        specs.append(server("/etc/default/prometheus-alertmanager", "monitoring/prometheus-alertmanager.default.j2",
                            {"peers": [f"{s}:{ALERTMANAGER_CLUSTER_PORT}" for s in stores if s != srv],
                             "cluster_port": ALERTMANAGER_CLUSTER_PORT, "port": ALERTMANAGER_PORT}))
        specs.append(server("/etc/clusterforge/monitoring/rules.yml", "monitoring/rules.yml.j2", rules))
        specs.append(server("/etc/prometheus/alertmanager.yml", "monitoring/alertmanager.yml.j2", am))
        specs.append(server("/etc/default/victoria-metrics", "monitoring/victoria-metrics.default.j2", vm_args))
        specs.append(server("/etc/systemd/system/clusterforge-vmalert.service", "monitoring/vmalert.service.j2",
                            units))
        if scrape is not None:
            specs.append(server("/etc/clusterforge/monitoring/scrape.yml", "monitoring/scrape.yml.j2", scrape))
            specs.append(server("/etc/systemd/system/clusterforge-vmagent.service", "monitoring/vmagent.service.j2",
                                units))
    specs.append(ib_health.file_spec())  # both paths: Telegraf's exec input runs it too
    if mon.collector == "exporters":
        # rendered once under monitoring/nodes/ per way the nodes' OS families run it, installed on each node at `dest`
        specs += node_exporter_specs(fab)
        every = {"script": IB_HEALTH, "textfile_dir": TEXTFILE_DIR, "every_s": IB_HEALTH_EVERY_S}
        specs.append(FileSpec("monitoring/nodes/clusterforge-ib-health.service", "monitoring/ib-health.service.j2",
                              every, dest="/etc/systemd/system/clusterforge-ib-health.service"))
        specs.append(FileSpec("monitoring/nodes/clusterforge-ib-health.timer", "monitoring/ib-health.timer.j2",
                              every, dest="/etc/systemd/system/clusterforge-ib-health.timer"))
    if _gpu_counts(index):  # every GPU node's (the deploy gives them to the nodes with GPUs)
        specs.append(FileSpec("monitoring/nodes/dcgm-counters.csv", "monitoring/dcgm-counters.csv.j2",
                              {"counters": [list(c) for c in DCGM_COUNTERS]}, dest=DCGM_COUNTERS_FILE))
        specs.append(FileSpec("monitoring/nodes/dcgm-exporter.service", "monitoring/dcgm-exporter.service.j2",
                              {"interval_ms": mon.interval_s * 1000, "port": DCGM_EXPORTER_PORT},
                              dest=DCGM_EXPORTER_UNIT))
    if mon.collector == "telegraf":
        for node in index.inv.nodes:
            specs.append(host_file(node.name, "/etc/telegraf/telegraf.conf", TELEGRAF_TEMPLATE,
                                   telegraf_context(fab, mon, node, stores)))
    return specs
