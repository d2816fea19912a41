"""Acceptance link tests chosen from the subnet manager's routes (issue #36; docs/accept.md, "Routes"): every
switch-to-switch cable crossed by at least one ib_write_bw test, twice where the rounds have room, read off the
forwarding tables the SM programmed instead of assumed from how ftree and updn usually spread destinations.

The plan's first round stays (accept/plan.py: the ports of each leaf paired with each other, every node-leaf
cable). The cross-leaf rounds are built from the tables (accept/flows.py), one round at a time:

1. each uplink not yet crossed gets a test whose flow crosses it, of the flows the tables send over it, the one
   crossing the most uplinks still short of a test (then short of a second), among the first few that fit;
2. then, while the round has room, each uplink crossed once gets a second test the same way, by a route that
   shares no other uplink with its first (so that a slow uplink is told from every uplink beside it);
3. then each port in fewer than two tests gets one (a slow port is told from its partner by being slow in all
   of its tests), to a free port of another leaf.

In a round no port is in two tests (the plan's rule), and no cable carries two flows the same way: each test has
its route to itself at full rate. Rounds are added while an uplink that a flow can cross is crossed fewer than
`want` times or a port is in fewer than two tests, up to `rounds` (ROUNDS), the uplinks of leaves with the fewest
host ports per uplink first in each. An uplink no flow crosses (a leaf with no hosts,
a link the SM routes around) is reported by cable id with why, and so is one that the rounds had no room for
(an infrastructure leaf's uplinks, more than its one SM port can cross in the rounds). Pure.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial

from ..model.index import Index
from ..parse.ibroute import SwitchLft, Tables
from ..render import FabricView
from ..validate.routes import Routes, resolve, uplinks
from .flows import DESTS_KEPT, Flows, key
from .plan import AcceptPlan, HostPort, LinkTest, leaf_uplinks, tcp_ports

__all__ = ["CANDIDATE_LIMIT", "RoutedCoverage", "cover", "routed_plan"]

CANDIDATE_LIMIT = 256
"""Flows looked at at most for one uplink in a round (a class whose ports or cables are busy is passed over)."""
BEST_OF = 4
"""Of the flows over an uplink that fit the round, the one crossing most uplinks short of tests among this many."""
ROUNDS = 5
"""The rounds a routed plan takes at most by default (`accept --rounds`), the first (within leaves) included. A
leaf with fewer host ports than uplinks (an infrastructure leaf's one SM port under 32 uplinks) gets one crossing
a round per port: its uplinks left over are said, with the rounds a plan crossing them all takes."""
MAX_ROUNDS = 256
"""How far the rounds past ROUNDS are built to say how many a plan crossing every uplink takes (a leaf of one
port under 64 uplinks takes 64): a guard, not a plan."""


@dataclass
class RoutedCoverage:
    crossing: dict[str, list[str]] = field(default_factory=dict)
    """Every uplink's cable id -> the names of the tests whose flow crosses it."""
    unreachable: dict[str, str] = field(default_factory=dict)
    """Uplinks no planned flow can cross -> why."""
    problems: list[str] = field(default_factory=list)
    """Planned tests whose flow the tables cannot follow (a test name and why)."""


class _Round:
    """One round being filled: its ports and its cables by direction."""

    def __init__(self, number: int, flows: Flows) -> None:
        self.number = number
        self.ports: set[tuple[str, str, int]] = set()
        self.lids: set[int] = set()
        """The LIDs of the ports taken: a destination whose port is busy starts no walk."""
        self.links: set[tuple[str, str]] = set()
        self.free = {leaf: list(ps) for leaf, ps in flows.by_leaf.items()}
        self._lid = flows.routes.lid

    def free_port(self, leaf: str) -> HostPort | None:
        ps = self.free.get(leaf, [])
        while ps and key(ps[-1]) in self.ports:
            ps.pop()
        return ps[-1] if ps else None

    def take(self, client: HostPort, server: HostPort, links: list[tuple[str, str]]) -> None:
        for p in (client, server):
            self.ports.add(key(p))
            if (lid := self._lid.get(key(p))) is not None:
                self.lids.add(lid)
        self.links.update(links)


def cover(index: Index, routes: Routes, ports: list[HostPort], tests: list[LinkTest],
          want: int = 2, rounds: int = 0) -> tuple[list[LinkTest], RoutedCoverage]:
    """The plan's first round (within leaves) and cross-leaf rounds built from the routes, so that every uplink
    is crossed `want` times where the rounds have room (`want=0`: the plan's own tests, only counted), in
    `rounds` at most (0: ROUNDS), with what each uplink is crossed by."""
    flows = Flows.of(index, routes, ports)
    ups = uplinks(index)
    cov = RoutedCoverage(crossing={u: [] for u in ups})
    state = _State(flows, cov, want, defaultdict(int))
    if want == 0:
        for t in tests:
            state.add(t)
        return list(tests), cov
    out = [t for t in tests if not t.cross_leaf]
    for t in out:
        state.add(t)
    for cid in ups:
        if next(flows.classes(cid), None) is None:
            cov.unreachable[cid] = _why_not(index, cid)
    limit = rounds or ROUNDS
    wanted = sorted((c for c in ups if c not in cov.unreachable), key=partial(_scarcity, index, flows,
                                                                              leaf_uplinks(index)))
    number = max((t.round for t in out), default=0)
    while number < MAX_ROUNDS:
        # past the limit the rounds go on for the first crossings only: to say how many a whole plan takes
        short = [c for c in wanted if not cov.crossing[c]]
        once = [c for c in wanted if 0 < len(cov.crossing[c]) < want] if number < limit else []
        lonely = [p for p in ports if state.uses[key(p)] < 2] if number < limit else []
        if not short and not once and not lonely:
            break
        number += 1
        rnd = _Round(number, flows)
        placed = [*_fill(state, rnd, short), *_fill(state, rnd, once), *_pair(state, rnd, lonely)]
        if not placed:
            break
        out += placed
    needed = max((t.round for t in out), default=0)
    if not all(cov.crossing[c] for c in wanted):
        needed = 0  # no number of rounds crosses them all (a flow the walk cannot follow)
    if max((t.round for t in out), default=0) > limit:
        dropped = {t.name for t in out if t.round > limit}
        out = [t for t in out if t.round <= limit]
        for names in cov.crossing.values():
            names[:] = [n for n in names if n not in dropped]
    for cid in wanted:
        if not cov.crossing[cid]:
            cov.unreachable[cid] = _why_not(index, cid, flows, limit, needed)
    return out, cov


@dataclass
class _State:
    """The plan so far: what each uplink is crossed by, each test's route, each port's tests."""

    flows: Flows
    cov: RoutedCoverage
    want: int
    uses: dict[tuple[str, str, int], int]
    route_of: dict[str, list[str]] = field(default_factory=dict)

    def short(self, cid: str) -> int:
        """How many more crossings uplink `cid` wants (0 for a cable that is not an uplink)."""
        names = self.cov.crossing.get(cid)
        return 0 if names is None else max(self.want - len(names), 0)

    def add(self, t: LinkTest, cables: list[str] | None = None) -> None:
        self.uses[key(t.client)] += 1
        self.uses[key(t.server)] += 1
        if not t.cross_leaf:
            return
        if cables is None:
            cables, why = self.flows.route(t.client, t.server)
            if why is not None:
                self.cov.problems.append(f"{t.name}: {why}")
        self.route_of[t.name] = cables
        for c in cables:
            if c in self.cov.crossing:
                self.cov.crossing[c].append(t.name)

    def beside(self, cid: str) -> set[str]:
        """The other uplinks on the routes of the tests crossing `cid`: a second test over `cid` crossing none of
        them tells `cid` slow from each of them (each has a fast test `cid` is not on)."""
        return {c for name in self.cov.crossing.get(cid, []) for c in self.route_of.get(name, [])
                if c != cid and c in self.cov.crossing}


def _scarcity(index: Index, flows: Flows, ups: dict[str, int], cid: str) -> tuple[float, str]:
    """The fewest host ports a leaf at either end of the cable has per uplink (the uplinks of a leaf with few
    hosts go first in each round: they compete for the same ports), then the id."""
    cable = index.cables[cid]
    ends = [len(flows.by_leaf[d]) / max(ups.get(d, 1), 1)
            for d in (cable.a.device, cable.b.device) if d in flows.by_leaf]
    return (min(ends, default=float("inf")), cid)


def _fill(state: _State, rnd: _Round, cables: list[str]) -> list[LinkTest]:
    """A test in `rnd` for each of `cables` still short of its crossings where one fits: of the first BEST_OF
    that fit, the one crossing the most uplinks short of a first crossing (3 each) or a later one (1 each); a
    later crossing only by a route that shares no other uplink with the earlier ones (`_State.beside`)."""
    flows = state.flows
    placed: list[LinkTest] = []
    for cid in cables:
        if state.short(cid) == 0:
            continue
        avoid = state.beside(cid)
        best: tuple[int, HostPort, HostPort, list[str], list[tuple[str, str]]] | None = None
        fits = 0
        for tried, (leaf, lid) in enumerate(flows.classes(cid, lambda d: d not in rnd.lids, rnd.links)):
            if tried >= CANDIDATE_LIMIT or fits >= BEST_OF:
                break
            server = flows.host_at[lid]
            if lid in rnd.lids:
                continue
            client = rnd.free_port(leaf)
            if client is None:
                continue
            walked = flows.walk(client, server, rnd.links)
            if walked is None:
                continue
            cables_, links = walked
            if cid not in cables_ or any(c in avoid for c in cables_) or links[0] in rnd.links:
                continue
            fits += 1
            gain = sum(1 + 2 * (state.short(c) >= state.want) for c in cables_ if state.short(c) > 0)
            if best is None or gain > best[0]:
                best = (gain, client, server, cables_, links)
        if best is None:
            continue
        _, client, server, cables_, links = best
        rnd.take(client, server, links)
        test = LinkTest(rnd.number, server, client)
        state.add(test, cables_)
        placed.append(test)
    return placed


def _pair(state: _State, rnd: _Round, lonely: list[HostPort]) -> list[LinkTest]:
    """A test in `rnd` for each port of `lonely` still in fewer than two tests and free: to a free port of another
    leaf (one of `lonely` first) whose route the round's cables have room for."""
    flows = state.flows
    placed: list[LinkTest] = []
    waiting = [p for p in lonely if key(p) not in rnd.ports and state.uses[key(p)] < 2]
    for p in waiting:
        if key(p) in rnd.ports:
            continue
        others = [q for q in waiting if q.leaf != p.leaf and key(q) not in rnd.ports]
        others += [q for leaf, ps in sorted(flows.by_leaf.items()) if leaf != p.leaf
                   for q in ps[:1] if key(q) not in rnd.ports]
        for q in others[:CANDIDATE_LIMIT]:
            if key(q) in rnd.ports:
                continue
            walked = flows.walk(p, q, rnd.links)
            if walked is None:
                continue
            cables_, links = walked
            if links[0] not in rnd.links:
                rnd.take(p, q, links)
                test = LinkTest(rnd.number, q, p)
                state.add(test, cables_)
                placed.append(test)
                break
    return placed


def _why_not(index: Index, cid: str, flows: Flows | None = None, limit: int = 0, needed: int = 0) -> str:
    cable = index.cables[cid]
    head = f"cable {cid} ({cable.a.device}/{cable.a.port} - {cable.b.device}/{cable.b.port})"
    if flows is None:
        return f"{head}: no route sends a host's traffic over it: the SM routes around it, or no host reaches it"
    sources: set[str] = set()
    dests: set[int] = set()
    for leaf, lid in flows.classes(cid):
        sources.add(leaf)
        dests.add(lid)
    ports = sum(len(flows.by_leaf[leaf]) for leaf in sources)
    named = ", ".join(sorted(sources)[:3]) + (", ..." if len(sources) > 3 else "")
    ends = f"{len(dests)}{' or more' if len(dests) >= DESTS_KEPT else ''}"
    return (f"{head}: not crossed in the plan's {limit} rounds: its flows start at {ports} host port(s) "
            f"({named}) and end at {ends}, and each round had those ports or the cables on the way taken "
            + (f"(every uplink is crossed in {needed} rounds: --rounds {needed})" if needed else
               "(no number of rounds crosses every uplink: the problems say which flows the tables break)"))


def routed_plan(index: Index, plan: AcceptPlan, tables: Tables | Iterable[SwitchLft], want: int = 2,
                rounds: int = 0) -> tuple[AcceptPlan, Routes, RoutedCoverage]:
    """`plan` with its cross-leaf rounds built from the SM's tables (`cover`), each server on its own TCP port
    again."""
    routes = resolve(index, FabricView(index).guids, tables)
    links, cov = cover(index, routes, plan.ports, plan.links, want, rounds)
    return dataclasses.replace(plan, links=tcp_ports(links)), routes, cov
