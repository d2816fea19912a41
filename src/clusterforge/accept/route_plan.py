"""Acceptance link tests chosen from the subnet manager's routes (issue #36; docs/accept.md, "Routes"): every
switch-to-switch cable crossed by at least one ib_write_bw test, twice where the fabric allows, read off the
forwarding tables the SM programmed instead of assumed from how ftree and updn usually spread destinations.

Start from the plan's rounds (accept/plan.py: every node-leaf cable, the cross-leaf round-robin); follow each
cross-leaf test's flow through the tables (validate/routes.py) and count the uplinks it crosses. For each uplink
crossed fewer than `want` times (a second time only where the rounds have room), look for a flow that crosses
it: one from a port of the leaf whose table sends some destination out of the uplink's port (up), or one to a
port of that leaf that the switch above sends down the uplink (down), found by following candidate flows. Each
such test goes into the first round where neither of its ports is busy (the plan's rule: no port twice in a
round), else into a new round. An uplink no flow can cross (a leaf with no hosts, a link the SM routes around)
is reported by cable id with why. Pure.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ..model.index import Index
from ..parse.ibroute import SwitchLft
from ..render import FabricView
from ..validate.routes import Routes, path, resolve, uplinks
from .plan import AcceptPlan, HostPort, LinkTest, tcp_ports

CANDIDATE_LIMIT = 256
"""Flows followed at most per uplink and direction when looking for one that crosses it (enough at 2,048
nodes: a leaf's table sends a destination out of each of its up-ports)."""


@dataclass
class RoutedCoverage:
    crossing: dict[str, list[str]] = field(default_factory=dict)
    """Every uplink's cable id -> the names of the tests whose flow crosses it."""
    unreachable: dict[str, str] = field(default_factory=dict)
    """Uplinks no planned flow can cross -> why."""
    problems: list[str] = field(default_factory=list)
    """Planned tests whose flow the tables cannot follow (a test name and why)."""


def _key(p: HostPort) -> tuple[str, str, int]:
    return (p.node, p.hca, p.port)


def _flow(index: Index, routes: Routes, client: HostPort, server: HostPort) -> tuple[list[str], str | None]:
    return path(index, routes, _key(client), _key(server))


def cover(index: Index, routes: Routes, ports: list[HostPort], tests: list[LinkTest],
          want: int = 2) -> tuple[list[LinkTest], RoutedCoverage]:
    """`tests` and the tests added so that every uplink is crossed `want` times where a flow can cross it, with
    what each uplink is crossed by."""
    ups = uplinks(index)
    up_set = set(ups)
    cov = RoutedCoverage(crossing={u: [] for u in ups})
    busy: dict[int, set[tuple[str, str, int]]] = defaultdict(set)
    for t in tests:
        busy[t.round] |= {_key(t.client), _key(t.server)}
    out = list(tests)

    def count(t: LinkTest) -> None:
        if not t.cross_leaf:
            return
        cables, why = _flow(index, routes, t.client, t.server)
        if why is not None:
            cov.problems.append(f"{t.name}: {why}")
        for c in cables:
            if c in up_set:
                cov.crossing[c].append(t.name)

    for t in tests:
        count(t)
    by_leaf = ports_by_leaf(ports)
    host_at = {routes.lid[_key(p)]: p for p in ports if _key(p) in routes.lid}  # once, not once an uplink
    last = max(busy, default=1)
    for need in range(1, want + 1):
        for cid in ups:
            if len(cov.crossing[cid]) >= need or cid in cov.unreachable:
                continue
            first: tuple[HostPort, HostPort] | None = None
            chosen: tuple[tuple[HostPort, HostPort], int] | None = None
            for pair in crossing_flows(index, routes, by_leaf, host_at, cid, set(cov.crossing[cid])):
                first = first or pair
                placed = _place(pair, busy, last, new_round=False)
                if placed is not None:  # a test that fits a round there is: no round more for it
                    chosen = (pair, placed)
                    break
            if first is None:
                if need == 1:
                    cov.unreachable[cid] = _why_not(index, cid)
                continue
            if chosen is None:
                if need > 1:  # a second crossing only where the rounds have room
                    continue
                chosen = (first, last + 1)
            (client, server), rnd = chosen
            test = LinkTest(rnd, server, client)
            busy[rnd] |= {_key(client), _key(server)}
            last = max(last, rnd)
            out.append(test)
            count(test)
    return out, cov


def ports_by_leaf(ports: Iterable[HostPort]) -> dict[str, list[HostPort]]:
    by_leaf: dict[str, list[HostPort]] = defaultdict(list)
    for p in ports:
        by_leaf[p.leaf].append(p)
    return by_leaf


def _place(pair: tuple[HostPort, HostPort], busy: dict[int, set[tuple[str, str, int]]], last: int,
           new_round: bool) -> int | None:
    """The first cross-leaf round (2 on) where neither port is busy; else the round after the last when
    `new_round`, else None."""
    a, b = _key(pair[0]), _key(pair[1])
    for r in range(2, last + 1):
        if a not in busy[r] and b not in busy[r]:
            return r
    return last + 1 if new_round else None


def crossing_flows(index: Index, routes: Routes, by_leaf: dict[str, list[HostPort]],
                    host_at: dict[int, HostPort], cid: str, taken: set[str]) -> Iterator[tuple[HostPort, HostPort]]:
    """(client, server) pairs whose flow crosses cable `cid`, not tests named in `taken`: of the first
    CANDIDATE_LIMIT candidate flows."""
    cable = index.cables[cid]
    for tried, (client, server) in enumerate(_candidates(routes, by_leaf, host_at, cable.a.device, cable.a.port,
                                                         cable.b.device, cable.b.port)):
        if tried >= CANDIDATE_LIMIT:
            return
        if LinkTest(0, server, client).name in taken:
            continue
        cables, why = _flow(index, routes, client, server)
        if why is None and cid in cables:
            yield client, server


def _why_not(index: Index, cid: str) -> str:
    cable = index.cables[cid]
    return (f"cable {cid} ({cable.a.device}/{cable.a.port} - {cable.b.device}/{cable.b.port}): no route sends a "
            f"host's traffic over it (of {CANDIDATE_LIMIT} candidate flows at most, each way): the SM routes around "
            "it, or no host reaches it")


def _candidates(routes: Routes, by_leaf: dict[str, list[HostPort]], host_at: dict[int, HostPort], a: str, pa: int,
                b: str, pb: int) -> Iterator[tuple[HostPort, HostPort]]:
    """Flows that may cross the cable a/pa - b/pb: out of a by pa (from a's hosts up, to any destination the
    table sends that way), then out of b by pb, then from other leaves to the far leaf's hosts. `host_at`: the
    planned host port at each LID."""
    for sw, port, other in ((a, pa, b), (b, pb, a)):
        table = routes.lft.get(sw, {})
        dests = [host_at[lid] for lid, out in sorted(table.items()) if out == port and lid in host_at]
        sources = by_leaf.get(sw, [])
        for d in dests:
            for s in sources:
                if s.leaf != d.leaf:
                    yield s, d
        # down: to the hosts of the leaf at the other end, from any other leaf's hosts
        for d in by_leaf.get(other, []):
            for leaf, ps in sorted(by_leaf.items()):
                if leaf != other:
                    for s in ps[:4]:
                        yield s, d


def routed_plan(index: Index, plan: AcceptPlan, tables: Iterable[SwitchLft],
                want: int = 2) -> tuple[AcceptPlan, Routes, RoutedCoverage]:
    """`plan` with the link tests the SM's tables call for (`cover`), each server on its own TCP port again."""
    routes = resolve(index, FabricView(index).guids, tables)
    links, cov = cover(index, routes, plan.ports, plan.links, want)
    return dataclasses.replace(plan, links=tcp_ports(links)), routes, cov
