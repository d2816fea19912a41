"""An uplink no route uses (issue #36 item 5; docs/validate.md): the forwarding tables the SM programmed
(fabric/dump_fts.txt, what collect saves from the SM node; per plane `dump_fts-plane<P>`) resolved onto the
declared switches (validate/routes.py), and every switch-to-switch cable whose ports at both ends no table sends
any LID out of is FAB-UNROUTED: a link the SM routes around carries no traffic, so the fabric runs with less
bisection than declared while every link shows up. A cable another finding already names (missing, down, at
the wrong width) is left to that finding; an uplink whose two switches have no table in the input is not
judged (a plane not collected), nor one whose switches route fewer destinations than they have links to spread
them over (a small fabric: a leaf of two hosts and four uplinks leaves two unused, healthily; the rail-planes
lab has such leaves). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..model.index import Index
from ..parse.ibroute import SwitchLft, Tables
from ..render import FabricView
from .findings import Finding, ids
from .routes import Routes, hosts_below, idle_uplinks, resolve, tier


def unrouted(index: Index, tables: Tables | Iterable[SwitchLft], named: set[str]) -> list[Finding]:
    """FAB-UNROUTED for each idle uplink of the tables' switches that no finding in `named` (cable ids) covers and
    whose two ends had destinations enough to spread over all their links (`_could_spread`)."""
    routes = resolve(index, FabricView(index).guids, tables)
    out = []
    below = hosts_below(index)
    for cid in idle_uplinks(index, routes):
        cable = index.cables[cid]
        if cid in named or not (cable.a.device in routes.lft and cable.b.device in routes.lft):
            continue
        low, high = (cable.a, cable.b) if tier(index, cable.a.device) <= tier(index, cable.b.device) \
            else (cable.b, cable.a)
        if not _could_spread(index, routes, low.device, high.device, below):
            continue
        a, b = cable.a.key, cable.b.key
        out.append(Finding(
            "FAB-UNROUTED", "error", f"cable {cid}",
            f"uplink {cid} ({a[0]}/{a[2]} - {b[0]}/{b[2]}) is up, but no forwarding table sends any LID out of "
            "either end, while both switches route more destinations than they have links to spread them over: "
            "the subnet manager routes around it",
            expected="some destinations routed over it (every uplink of a fat tree carries a share)",
            observed=f"{a[0]} and {b[0]}: no route out of port {a[2]} / {b[2]}",
            action="check the SM's log for the port (ARMED, not ACTIVE? a link it judged unhealthy?) and the "
                   "routing engine's settings (ftree's root GUIDs, updn's roots, the port's weight); once fixed, "
                   "a heavy sweep (`kill -HUP` OpenSM) reroutes; then collect dump_fts again",
            **ids(a, cable=cable)))
    return out


def _links(index: Index, a: str, b: str) -> list[tuple[int, int]]:
    """(port of a, port of b) of every cable between switches a and b."""
    out = []
    for c in index.inv.cables:
        if c.a.hca is None and c.b.hca is None and {c.a.device, c.b.device} == {a, b} and a != b:
            out.append((c.a.port, c.b.port) if c.a.device == a else (c.b.port, c.a.port))
    return out


def _could_spread(index: Index, routes: Routes, low: str, high: str,
                  below: dict[str, set[tuple[str, str, int]]]) -> bool:
    """Whether the SM had destinations enough to put one on every link here: `low` routes at least as many LIDs up
    as it has up-ports, and `high` routes at least as many of the LIDs beneath `low` as it has links down to it. A
    small fabric whose leaf reaches fewer destinations than it has uplinks leaves some unused, healthily."""
    up_ports = {c.a.port if c.a.device == low else c.b.port for c in index.inv.cables
                if c.a.hca is None and c.b.hca is None and low in (c.a.device, c.b.device)
                and tier(index, c.b.device if c.a.device == low else c.a.device) > tier(index, low)}
    up_lids = sum(routes.lft[low].ports.count(port) for port in up_ports)
    beneath = {routes.lid[k] for k in below.get(low, set()) if k in routes.lid}
    down_lids = sum(1 for lid in beneath if lid in routes.lft[high])
    return up_lids >= len(up_ports) and down_lids >= len(_links(index, high, low))
