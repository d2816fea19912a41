"""Which cable is slow, from the routes of the slow and the fast link tests (issue #36; docs/accept.md, "Routes").

With the subnet manager's forwarding tables (validate/routes.py) every ib_write_bw test has a route: the cables its
flow crosses, from the client's port to the server's, uplinks included. A fast test clears every cable on its
route. A slow test's suspects are the cables on its route that no fast test cleared:

- one suspect: that cable is the slow part (a node-leaf cable as the port's finding, an uplink by its id);
- a slow test whose suspects include a cable found so is explained by it;
- the slow tests left share suspects: where every one of a group shares exactly one, that one is it; else the
  cables that remain are named, with the next round's tests that split them: each crosses one of them and no
  other (a bisection over cables, not nodes, in one round where the ports allow);
- no suspect at all (every cable on the route is fast elsewhere): the slow part is inside a switch on the route.

Pure: results in, verdicts out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..model.index import Index
from ..validate.routes import Routes, path
from .flows import Flows
from .plan import HostPort, LinkTest, tcp_ports
from .route_plan import CANDIDATE_LIMIT


@dataclass
class Located:
    found: dict[str, list[LinkTest]] = field(default_factory=dict)
    """A cable found slow -> the slow tests it explains."""
    undecided: list[tuple[tuple[str, ...], list[LinkTest]]] = field(default_factory=list)
    """The cables that remain for a group of slow tests the evidence cannot single one out for, and the tests."""
    in_switch: list[tuple[LinkTest, tuple[str, ...]]] = field(default_factory=list)
    """Slow tests every cable of whose route is fast elsewhere, and the switches the route crosses."""
    unrouted: list[tuple[LinkTest, str]] = field(default_factory=list)
    """Slow tests whose route the tables cannot follow, and why."""
    cleared: frozenset[str] = frozenset()
    """Every cable on a fast test's route."""
    routes_of: dict[str, list[str]] = field(default_factory=dict)
    """A test's name -> the cables of its route (the tests that could be followed)."""


def route(index: Index, routes: Routes, t: LinkTest) -> tuple[list[str], str | None]:
    """The cables a test's flow crosses (client to server: ib_write_bw writes from the client), and why not."""
    return path(index, routes, (t.client.node, t.client.hca, t.client.port),
                (t.server.node, t.server.hca, t.server.port))


def locate(index: Index, routes: Routes, slow: Mapping[LinkTest, bool]) -> Located:
    """The verdicts for the tests run (`slow`: test -> below its bound)."""
    out = Located()
    suspects: dict[LinkTest, set[str]] = {}
    cleared: set[str] = set()
    for t in slow:
        cables, why = route(index, routes, t)
        if why is not None:
            if slow[t]:
                out.unrouted.append((t, why))
            continue
        out.routes_of[t.name] = cables
        if not slow[t]:
            cleared.update(cables)
    out.cleared = frozenset(cleared)
    for t, is_slow in slow.items():
        if is_slow and t.name in out.routes_of:
            suspects[t] = set(out.routes_of[t.name]) - cleared
    for t, left in suspects.items():
        if not left:
            out.in_switch.append((t, _switches(index, out.routes_of[t.name])))
        elif len(left) == 1:
            out.found.setdefault(next(iter(left)), [])
    rest = [t for t, left in suspects.items() if left and not left & out.found.keys()]
    for group in _groups(rest, suspects):
        common = set.intersection(*(suspects[t] for t in group))
        if len(common) == 1:
            out.found.setdefault(next(iter(common)), [])
        else:
            out.undecided.append((tuple(sorted(common or set.union(*(suspects[t] for t in group)))),
                                  sorted(group, key=lambda t: t.name)))
    for t, left in suspects.items():
        for c in sorted(left & out.found.keys()):
            out.found[c].append(t)
    return out


def rates_along(index: Index, routes: Routes, tests: list[LinkTest],
                 cable_gbps: Mapping[str, float | None]) -> dict[str, float | None]:
    """Each test's rate along its route (test name -> the slowest of its cables' rates, `cable_gbps`: cable id ->
    Gb/s, None where down); a test whose route the tables cannot follow is left out."""
    out: dict[str, float | None] = {}
    for t in tests:
        cables, why = route(index, routes, t)
        if why is None:
            on = [cable_gbps.get(c) for c in cables]
            out[t.name] = None if any(r is None for r in on) else min(r for r in on if r is not None)
    return out


def _groups(tests: list[LinkTest], suspects: Mapping[LinkTest, set[str]]) -> list[list[LinkTest]]:
    """The slow tests in groups that share a suspect, transitively (union-find over cables)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for t in tests:
        first, *others = sorted(suspects[t])
        for c in others:
            parent[find(c)] = find(first)
    by_root: dict[str, list[LinkTest]] = defaultdict(list)
    for t in tests:
        by_root[find(min(suspects[t]))].append(t)
    return [by_root[r] for r in sorted(by_root)]


def _switches(index: Index, cables: Iterable[str]) -> tuple[str, ...]:
    seen: list[str] = []
    for cid in cables:
        c = index.cables[cid]
        for end in (c.a, c.b):
            if end.hca is None and end.device in index.switches and end.device not in seen:
                seen.append(end.device)
    return tuple(seen)


def splitting_tests(index: Index, routes: Routes, ports: list[HostPort], cables: tuple[str, ...],
                    cleared: frozenset[str], first_round: int) -> list[LinkTest]:
    """Tests for the rounds after `first_round - 1` that split `cables`: each crosses one of them and no other,
    one whose other cables are all cleared first; no port twice in a round. A cable no such flow crosses gets
    none (the finding says so)."""
    flows = Flows.of(index, routes, ports)
    at_cable = {p.cable: p for p in ports}
    busy: dict[int, set[tuple[str, str, int]]] = defaultdict(set)
    out: list[LinkTest] = []
    others = set(cables)
    for cid in cables:
        # the best flow: fewest cables not cleared besides this one, then the earliest round its ports are free in
        best: tuple[int, int, HostPort, HostPort] | None = None
        for tried, (client, server) in enumerate(_flows_over(flows, at_cable, cid)):
            if tried >= CANDIDATE_LIMIT or (best is not None and best[:2] == (0, first_round)):
                break
            crossed, why = path(index, routes, (client.node, client.hca, client.port),
                                (server.node, server.hca, server.port))
            if why is not None or cid not in crossed or (set(crossed) & others) != {cid}:
                continue
            unknown = sum(1 for c in crossed if c != cid and c not in cleared)
            rnd = _free_round(busy, first_round, client, server)
            if best is None or (unknown, rnd) < best[:2]:
                best = (unknown, rnd, client, server)
        if best is None:
            continue
        _, rnd, client, server = best
        busy[rnd] |= {(client.node, client.hca, client.port), (server.node, server.hca, server.port)}
        out.append(LinkTest(rnd, server, client))
    return tcp_ports(out)


def _free_round(busy: Mapping[int, set[tuple[str, str, int]]], first: int, a: HostPort, b: HostPort) -> int:
    keys = {(a.node, a.hca, a.port), (b.node, b.hca, b.port)}
    rnd = first
    while busy.get(rnd, set()) & keys:
        rnd += 1
    return rnd


def _flows_over(flows: Flows, at_cable: dict[str, HostPort], cid: str) -> Iterable[tuple[HostPort, HostPort]]:
    """Candidate flows over cable `cid`: for a node-leaf cable, its port to the other ports of its leaf (and
    then the other way); for an uplink, the flows the tables send over it (accept/flows.py)."""
    port = at_cable.get(cid)
    if port is None:
        yield from flows.crossing(cid)
        return
    for other in flows.by_leaf.get(port.leaf, []):
        if other != port:
            yield port, other
            yield other, port
