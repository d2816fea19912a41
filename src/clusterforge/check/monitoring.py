"""The monitoring section against the rest of the inventory: nodes, profiles, routes for every level used."""

from __future__ import annotations

import re

from ..model.index import Index
from ..model.monitoring import DEFAULT_LEVELS, Migration, Monitoring
from ..util.errors import InventoryIssue

_PLACEHOLDER = re.compile(r"\{[a-z_]+\}")

# each scheduler command of a migration: the placeholders it must name, and those it may
MIGRATION_ARGV: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "jobs": (frozenset({"{host}"}), frozenset({"{host}"})),
    "signal_job": (frozenset({"{job}"}), frozenset({"{job}", "{signal}"})),
    "requeue": (frozenset({"{job}"}), frozenset({"{job}"})),
    "requeuehold": (frozenset({"{job}"}), frozenset({"{job}"})),
    "reboot": (frozenset({"{host}"}), frozenset({"{host}", "{reason}"})),
    "where": (frozenset({"{jobs}"}), frozenset({"{jobs}"})),
}


def check(index: Index) -> list[InventoryIssue]:
    mon = index.inv.monitoring
    if mon is None:
        return []
    out: list[InventoryIssue] = []
    for i, name in enumerate(mon.servers):
        if name not in index.nodes:
            out.append(InventoryIssue(("monitoring", "servers", i), f"monitoring node {name!r} is not a declared node",
                rule="INV-REF"))
    if mon.server_role is not None and not any(n.role == mon.server_role for n in index.inv.nodes):
        out.append(InventoryIssue(("monitoring", "server_role"),
                                  f"no node has the role {mon.server_role!r}: nowhere to run the store and vmalert",
                                      rule="INV-MONITORING"))
    for name in mon.profiles:
        if name not in index.profiles:
            known = ", ".join(sorted(index.profiles)) or "none declared"
            out.append(InventoryIssue(("monitoring", "profiles", name),
                                      f"thresholds for profile {name!r}, which is not a declared profile ({known})",
                                          rule="INV-REF"))
    if mon.store == "influxdb":
        if mon.collector != "telegraf":
            out.append(InventoryIssue(("monitoring", "store"),
                                      "store influxdb needs collector telegraf: the exporters path writes through "
                                      "vmagent, which speaks Prometheus remote write, not InfluxDB's /write",
                                          rule="INV-MONITORING"))
        if mon.influxdb_url is None:
            out.append(InventoryIssue(("monitoring", "store"),
                                      "store influxdb: give influxdb_url (the InfluxDB 1.x base URL)",
                                          rule="INV-MONITORING"))
    if mon.remote_write and mon.collector != "exporters":
        out.append(InventoryIssue(("monitoring", "remote_write"),
                                  "remote_write is vmagent's (collector exporters); with telegraf, point its "
                                  "outputs at the VictoriaMetrics cluster's vminsert instead", rule="INV-MONITORING"))
    used = {mon.level(a) for a in DEFAULT_LEVELS}
    routes = mon.alerts
    if 2 in used and routes.email is None:
        out.append(InventoryIssue(("monitoring", "alerts"),
                                  "alerts of level 2 send e-mail: give alerts.email (to, sender, smarthost), "
                                  "or move them to level 1 in alerts.levels", rule="INV-MONITORING"))
    if 3 in used:
        if routes.page is None:
            out.append(InventoryIssue(("monitoring", "alerts"),
                                      "alerts of level 3 page and drain: give alerts.page (webhook, drain), "
                                      "or move them to a lower level in alerts.levels", rule="INV-MONITORING"))
        elif routes.page.webhook is None and not routes.page.drain and routes.email is None:
            out.append(InventoryIssue(("monitoring", "alerts", "page"),
                                      "level 3 would reach no one: give a webhook, drain: true or alerts.email",
                                          rule="INV-MONITORING"))
        if routes.page is not None and routes.page.drain and not index.inv.deploy.reboot.drain:
            out.append(InventoryIssue(("monitoring", "alerts", "page", "drain"),
                                      "level 3 drains through deploy.reboot.drain, which is empty: give the drain "
                                      "argv (e.g. [scontrol, update, nodename={hosts}, state=drain, "
                                      "'reason={reason}']) or set drain: false", rule="INV-MONITORING"))
        if routes.page is not None and routes.page.migrate is not None:
            out += migration_issues(index, mon, routes.page.migrate, routes.page.drain)
    return out


def _used_argv(m: Migration) -> list[str]:
    """The commands a migration runs: the job list, the requeue its `how` names, the signal with a grace, the
    reboot after, and where the moved jobs are."""
    if m.how == "none":
        return []
    return (["jobs", m.how] + (["signal_job"] if m.grace_s else []) + (["reboot"] if m.after == "reboot" else [])
            + ["where"])


def migration_issues(index: Index, mon: Monitoring, m: Migration, drain: bool) -> list[InventoryIssue]:
    """Level 3's job migration against the rest: a drain first, each command's placeholders, a reboot's way back."""
    at = ("monitoring", "alerts", "page", "migrate")
    out: list[InventoryIssue] = []
    if not drain and m.how != "none":
        out.append(InventoryIssue(at, "migrate without drain: a requeued job would land on the same node again; "
                                      "set alerts.page.drain: true", rule="INV-MONITORING"))
    for field in _used_argv(m):
        argv: list[str] = getattr(m, field)
        need, may = MIGRATION_ARGV[field]
        named = {p for part in argv for p in _PLACEHOLDER.findall(part)}
        if not argv:
            out.append(InventoryIssue((*at, field), f"{field} is empty: the migration runs it", rule="INV-MONITORING"))
        elif missing := sorted(need - named):
            out.append(InventoryIssue((*at, field), f"{field} names no {', '.join(missing)}: the argv would not say "
                                                    "which " + ("node" if "{host}" in missing else "job(s)"),
                                      rule="INV-MONITORING"))
        elif extra := sorted(named - may):
            out.append(InventoryIssue((*at, field), f"{field} names {', '.join(extra)}, which it is not given "
                                                    f"(it takes {', '.join(sorted(may))})", rule="INV-MONITORING"))
    if m.how != "none" and m.after == "reboot":
        if not index.inv.deploy.reboot.resume:
            out.append(InventoryIssue((*at, "after"), "after: reboot needs deploy.reboot.resume: the health check "
                                                      "puts the rebooted node back through it", rule="INV-MONITORING"))
        if not index.inv.health_check.enabled:
            out.append(InventoryIssue((*at, "after"), "after: reboot needs health_check.enabled: only a passing "
                                                      "health check puts the rebooted node back",
                                      rule="INV-MONITORING"))
    for i, name in enumerate(m.alerts):
        if mon.level(name) != 3:
            out.append(InventoryIssue((*at, "alerts", i), f"{name} is level {mon.level(name)} here: only level 3 "
                                                          "alerts move jobs", rule="INV-MONITORING"))
    return out
