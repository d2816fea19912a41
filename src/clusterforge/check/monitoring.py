"""The monitoring section against the rest of the inventory: nodes, profiles, routes for every level used."""

from __future__ import annotations

from ..model.index import Index
from ..model.monitoring import DEFAULT_LEVELS
from ..util.errors import InventoryIssue


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
    return out
