"""The link tests judged along the SM's routes (issue #36; docs/accept.md, "Routes"): the verdicts of accept/locate.py
as findings. A cable found slow is the port's ACC-LINK when it is a node-leaf cable, ACC-UPLINK with its cable id,
both ports, trunk and lane when it is an uplink; cables the evidence cannot single out are named with the next
round's tests that split them; a slow test whose every cable is fast elsewhere names the switches on its route."""

from __future__ import annotations

from ..model.index import Index
from ..model.place_text import route_text
from ..validate.findings import Finding, ids
from ..validate.routes import Routes
from .expect import Expect
from .link_findings import gbps_text, least, port_finding, port_ids
from .locate import Located, locate, route, splitting_tests
from .plan import AcceptPlan, HostPort, LinkTest


def routed_links(index: Index, exp: Expect, plan: AcceptPlan, routes: Routes, results: dict[LinkTest, float | None],
                 findings: list[Finding]) -> list[HostPort]:
    """The link tests judged along their routes (accept/locate.py): each slow cable named, node-leaf or uplink."""
    slow = {t: gbps is None or gbps < least(exp, t) for t, gbps in results.items()}
    loc = locate(index, routes, slow)
    at_cable = {p.cable: p for p in plan.ports}
    slow_ports: list[HostPort] = []
    for cid, tests in sorted(loc.found.items()):
        seen = ", ".join(f"{t.name} {gbps_text(results[t])}" for t in tests)
        once = " (crossed by one test: run it again to confirm)" if len(tests) == 1 else ""
        port = at_cable.get(cid)
        if port is not None:
            slow_ports.append(port)
            findings.append(port_finding(
                exp, port, f"ib_write_bw slow in {len(tests)} test(s) whose every other cable is fast in another test "
                           f"(by the SM's routes): the slow part is this port's link{once}", seen))
            continue
        cable = index.cables[cid]
        low, high = _ends(index, cid)
        trunk = route_text(index, cable)
        findings.append(Finding(
            "ACC-UPLINK", "error", f"cable {cid}",
            f"ib_write_bw slow in {len(tests)} test(s) whose route crosses uplink {cid}, which no fast test's route "
            f"crosses, while every other cable on them is fast in another test: the slow part is this uplink{once}",
            expected=f">= {min(least(exp, t) for t in tests):g} Gb/s", observed=seen,
            floor=f"cable {cid}: {low[0]}/{low[2]} - {high[0]}/{high[2]}" + (f"; {trunk}" if trunk else ""),
            action=f"check uplink {cid} ({low[0]}/{low[2]} <-> {high[0]}/{high[2]}"
                   + (f", {trunk}" if trunk else "") + "): validate for its width and speed, the port counters at "
                   "both ends (perfquery) for symbol errors; reseat or replace it, then re-run the tests that cross it",
            details=tuple(f"{t.name}: route {' '.join(loc.routes_of[t.name])}" for t in tests),
            **ids(low, cable=cable)))
    _undecided(index, exp, plan, routes, loc, results, findings)
    for t, switches in loc.in_switch:
        findings.append(Finding(
            "ACC-LINK", "error", f"{t.client.label} -> {t.server.label}",
            "ib_write_bw slow while every cable on its route is fast in another test: the slow part is inside a "
            f"switch on the route ({', '.join(switches)}), or the test was disturbed",
            expected=f">= {least(exp, t):g} Gb/s", observed=gbps_text(results[t]),
            floor=f"route {' '.join(loc.routes_of[t.name])}",
            action="run the test again; a repeat points at those switches (their logs, ibqueryerrors for the "
                   "ports on the route)", **port_ids(t.client)))
    for t, why in loc.unrouted:
        findings.append(Finding(
            "ACC-LINK", "error", f"{t.client.label} -> {t.server.label}",
            f"ib_write_bw slow, and its route cannot be followed in the SM's tables ({why})",
            expected=f">= {least(exp, t):g} Gb/s", observed=gbps_text(results[t]),
            floor=f"cables {t.client.cable}, {t.server.cable}",
            action="dump the forwarding tables again from the master SM (dump_fts) and judge again: tables of "
                   "another sweep, or a route the SM could not build", **port_ids(t.client)))
    return slow_ports


def _ends(index: Index, cid: str) -> tuple[tuple[str, str | None, int], tuple[str, str | None, int]]:
    """An uplink's two ends, the lower tier's first (leaf before spine before core)."""
    tier = {"leaf": 0, "spine": 1, "core": 2}
    c = index.cables[cid]
    a, b = c.a.key, c.b.key
    rank = {k: tier.get(index.switches[k[0]].role, 3) if k[0] in index.switches else -1 for k in (a, b)}
    return (a, b) if rank[a] <= rank[b] else (b, a)


def _undecided(index: Index, exp: Expect, plan: AcceptPlan, routes: Routes, loc: Located,
               results: dict[LinkTest, float | None], findings: list[Finding]) -> None:
    """A finding per group of slow tests the evidence cannot single a cable out for: the cables that remain, and
    the next round's tests that split them."""
    nxt = plan.rounds + 1
    for cables, tests in loc.undecided:
        split = splitting_tests(index, routes, plan.ports, cables, loc.cleared, nxt)
        nxt = max([nxt, *(t.round + 1 for t in split)])
        left = [c for c in cables if not any(c in _route_of(index, routes, t) for t in split)]
        findings.append(Finding(
            "ACC-LINK", "error", f"cables {', '.join(cables)}",
            f"ib_write_bw slow in {len(tests)} test(s) between leaves; one of {len(cables)} cables on their routes "
            "that no fast test crosses is slow, and the evidence cannot single it out",
            expected=f">= {min(least(exp, t) for t in tests):g} Gb/s",
            observed=", ".join(f"{t.name} {gbps_text(results[t])}" for t in tests),
            floor=f"cables {', '.join(cables)}",
            action=("run the next round's tests (details: each crosses one of these cables and no other), save each "
                    "as links/<name> in this directory and judge it again with the same --routes"
                    + (f"; no test can split {', '.join(left)} off (check it by hand)" if left else ""))
            if split else "no flow crosses one of these cables alone: check them by hand (validate, perfquery)",
            details=tuple(f"round {t.round}: {t.client.label} -> {t.server.label} crosses "
                          f"{next(c for c in cables if c in _route_of(index, routes, t))}; save as links/{t.name}; "
                          f"server: {' '.join(t.argv('<server address>')[0])}; "
                          f"client: {' '.join(t.argv('<server address>')[1])}"
                          for t in split),
            **ids(_ends(index, cables[0])[0], cable=index.cables[cables[0]])))


def _route_of(index: Index, routes: Routes, t: LinkTest) -> list[str]:
    cables, _why = route(index, routes, t)
    return cables
