"""An uplink no route uses (issue #36 item 5; docs/validate.md): the forwarding tables the SM programmed
(fabric/dump_fts.txt, what collect saves from the SM node; per plane `dump_fts-plane<P>`) resolved onto the
declared switches (validate/routes.py), and every switch-to-switch cable whose ports at both ends no table sends
any LID out of is FAB-UNROUTED: a link the SM routes around carries no traffic, so the fabric runs with less
bisection than declared while every link shows up. A cable another finding already names (missing, down, at
the wrong width) is left to that finding; an uplink whose two switches have no table in the input is not
judged (a plane not collected). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..model.index import Index
from ..parse.ibroute import SwitchLft
from ..render import FabricView
from .findings import Finding, ids
from .routes import idle_uplinks, resolve


def unrouted(index: Index, tables: Iterable[SwitchLft], named: set[str]) -> list[Finding]:
    """FAB-UNROUTED for each idle uplink of the tables' switches that no finding in `named` (cable ids) covers."""
    routes = resolve(index, FabricView(index).guids, tables)
    out = []
    for cid in idle_uplinks(index, routes):
        cable = index.cables[cid]
        if cid in named or not (cable.a.device in routes.lft and cable.b.device in routes.lft):
            continue
        a, b = cable.a.key, cable.b.key
        out.append(Finding(
            "FAB-UNROUTED", "error", f"cable {cid}",
            f"uplink {cid} ({a[0]}/{a[2]} - {b[0]}/{b[2]}) is up, but no forwarding table sends any LID out of "
            "either end: the subnet manager routes around it",
            expected="some destinations routed over it (every uplink of a fat tree carries a share)",
            observed=f"{a[0]} and {b[0]}: no route out of port {a[2]} / {b[2]}",
            action="check the SM's log for the port (ARMED, not ACTIVE? a link it judged unhealthy?) and the "
                   "routing engine's settings (ftree's root GUIDs, updn's roots, the port's weight); once fixed, "
                   "a heavy sweep (`kill -HUP` OpenSM) reroutes; then collect dump_fts again",
            **ids(a, cable=cable)))
    return out
