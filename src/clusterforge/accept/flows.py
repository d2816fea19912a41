"""Which host-to-host flows cross a switch-to-switch cable, read off the subnet manager's forwarding tables
(issue #36; docs/accept.md, "Routes"). Pure.

A flow's route depends only on the switch it enters the fabric at and its destination's LID: every switch sends a
LID out of one port whatever the source. So a cable X/px - Y is crossed from X to Y by exactly the flows to a
destination D that X sends out of px (X's table: D -> px) whose route reaches X: those entering at X itself, or at
a switch whose table sends D to X, or at one whose table sends D to one of those, and so on. That set is found by
walking the cables into X backwards, keeping each neighbour W whose table sends D out of its port toward X
(`feeders`). The leaves in it, with their host ports, are the sources. Nothing is assumed of the engine: minhop,
ftree, updn, an LMC-0 table that does not spread, a leaf with its link routed around, three tiers: the classes
are what the tables program.

Which destinations some host's flow brings to each switch at all (`carried`) is found once for the whole fabric,
forwards: a leaf brings every planned host's LID but its own hosts', and each switch passes what it carries to
the neighbour its table sends it to, a port at a time, each table's bytes masked in one operation (a byte a LID,
as an int). A route a switch holds for a destination that no host's flow ever brings there (minhop programs a
spine's routes to every core; the leaves send each destination to one spine) starts no candidate, and a cable
none of whose routes is carried is known to be crossed by none without a walk.
"""

from __future__ import annotations

from array import array
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Set
from dataclasses import dataclass, field

from ..model.index import Index
from ..parse.ibroute import NO_ROUTE
from ..validate.routes import MAX_HOPS, Routes, path
from .plan import HostPort, LinkTest

CaKey = tuple[str, str, int]

DESTS_KEPT = 256
"""The destinations kept per switch port to start flows over its cable from (in LID order): enough to find a
free server in every round; a byte-array each, so that 60,000 ports of a 2,048-node fabric keep 30 MB."""
_NONE = bytes([NO_ROUTE])
_ONES: dict[int, bytes] = {}


def _one(port: int) -> bytes:
    """A bytes.translate table: `port` -> 1, every other byte -> 0."""
    table = _ONES.get(port)
    if table is None:
        table = _ONES[port] = bytes(1 if b == port else 0 for b in range(256))
    return table


def key(p: HostPort) -> CaKey:
    return (p.node, p.hca, p.port)


def ports_by_leaf(ports: Iterable[HostPort]) -> dict[str, list[HostPort]]:
    by_leaf: dict[str, list[HostPort]] = defaultdict(list)
    for p in ports:
        by_leaf[p.leaf].append(p)
    return by_leaf


@dataclass
class Flows:
    """The tables read for flows over cables, built once per plan (`of`)."""

    index: Index
    routes: Routes
    by_leaf: dict[str, list[HostPort]]
    host_at: dict[int, HostPort]
    """The planned host port at each destination LID."""
    into: dict[str, list[tuple[str, int]]]
    """Switch -> (each switch cabled to it, that switch's port on the cable): the cables walked backwards."""
    _out: dict[tuple[str, int], array[int]] = field(default_factory=dict)
    _carried: dict[str, int] | None = None
    _bytes: dict[str, bytes] = field(default_factory=dict)
    _rows: dict[str, bytes] = field(default_factory=dict)
    _hops: dict[str, dict[int, tuple[str, str, bool]]] = field(default_factory=dict)
    """Switch -> its cabled port -> (cable id, the device at the far end, whether that is an HCA port)."""
    _arrive: dict[str, bytes] = field(default_factory=dict)
    _width: int = 0

    @classmethod
    def of(cls, index: Index, routes: Routes, ports: Iterable[HostPort]) -> Flows:
        ports = list(ports)
        into: dict[str, list[tuple[str, int]]] = defaultdict(list)
        hops: dict[str, dict[int, tuple[str, str, bool]]] = defaultdict(dict)
        for c in index.inv.cables:  # once: each port's hop, and the cables walked back
            for near, far in ((c.a, c.b), (c.b, c.a)):
                if near.hca is None and near.device in index.switches:
                    hops[near.device][near.port] = (c.id, far.device, far.hca is not None)
                    if far.hca is None and far.device in index.switches:
                        into[far.device].append((near.device, near.port))
        host_at = {routes.lid[key(p)]: p for p in ports if key(p) in routes.lid}
        width = max([len(t.ports) for t in routes.lft.values()] + [max(host_at, default=0) + 1])
        flows = cls(index, routes, ports_by_leaf(ports), host_at, dict(into), _width=width)
        flows._hops = dict(hops)
        flows._rows = {sw: t.ports.ljust(width, _NONE) for sw, t in routes.lft.items()}
        flows.carried()
        return flows

    def dests(self, switch: str, port: int) -> array[int]:
        """The planned hosts' LIDs `switch` sends out of `port` that some host's flow brings to `switch`
        (`carried`), in LID order: the first DESTS_KEPT of them."""
        kept = self._out.get((switch, port))
        if kept is None:
            row, carried = self._rows.get(switch), (self._carried or {}).get(switch, 0)
            kept = array("H")
            if row is not None and carried:
                n = self._width
                out = int.from_bytes(row.translate(_one(port)), "little") & carried
                if out:
                    hits = out.to_bytes(n, "little")
                    at = hits.find(1)
                    while at >= 0 and len(kept) < DESTS_KEPT:
                        kept.append(at)
                        at = hits.find(1, at + 1)
            self._out[(switch, port)] = kept
        return kept

    def carried(self) -> dict[str, int]:
        """Each switch -> the LIDs some host's flow to them passes it by, a byte a LID (1: passes) as an int:
        a leaf carries every planned host's LID but its own hosts'; a switch carries what a neighbour that
        carries it sends it. The tables' bytes masked port by port (a 2,048-node fabric in seconds)."""
        if self._carried is not None:
            return self._carried
        n = self._width
        hosts = bytearray(n)
        for lid in self.host_at:
            hosts[lid] = 1
        carried: dict[str, int] = {}
        fresh: dict[str, int] = {}
        for leaf, ports in self.by_leaf.items():
            mine = bytearray(hosts)
            for hp in ports:
                if (own := self.routes.lid.get(key(hp))) is not None:
                    mine[own] = 0
            carried[leaf] = fresh[leaf] = int.from_bytes(mine, "little")
        out_of: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for far, ends in self.into.items():
            for near, port in ends:
                out_of[near].append((port, far))
        arrive: dict[str, int] = {}  # what neighbours send each switch: where a walk back goes on
        queue = deque(fresh)
        while queue:
            at = queue.popleft()
            new, table = fresh.pop(at, 0), self.routes.lft.get(at)
            if not new or table is None:
                continue
            row = table.ports.ljust(n, _NONE)
            for port, far in out_of.get(at, ()):
                sent = int.from_bytes(row.translate(_one(port)), "little") & new
                if sent:
                    arrive[far] = arrive.get(far, 0) | sent
                more = sent & ~carried.get(far, 0)
                if more:
                    carried[far] = carried.get(far, 0) | more
                    if far not in fresh:
                        queue.append(far)
                    fresh[far] = fresh.get(far, 0) | more
        self._carried = carried
        self._bytes = {sw: v.to_bytes(n, "little") for sw, v in carried.items()}
        self._arrive = {sw: v.to_bytes(n, "little") for sw, v in arrive.items()}
        return carried

    def feeders(self, switch: str, lid: int) -> Iterator[str]:
        """The leaves whose flows to `lid` reach `switch` (it first, then by distance): the tables walked back,
        through the switches that carry `lid`."""
        rows, carries, arrive = self._rows, self._bytes, self._arrive
        seen = {switch}
        queue = [switch]
        for at in queue:
            if at in self.by_leaf:
                yield at
            if not (a := arrive.get(at)) or not a[lid]:
                continue  # no neighbour sends it `lid`
            for w, port in self.into.get(at, ()):
                if w not in seen and (c := carries.get(w)) is not None and c[lid] and rows[w][lid] == port:
                    seen.add(w)
                    queue.append(w)

    def classes(self, cid: str, usable: Callable[[int], bool] | None = None,
                busy: Set[tuple[str, str]] = frozenset()) -> Iterator[tuple[str, int]]:
        """(source leaf, destination LID) of the flows that cross cable `cid`, in either direction: each
        destination the near end sends over it (those `usable` says yes to), with each leaf whose flows to it
        reach the near end; not the way out of a near end in `busy` ((cable, device left from) pairs)."""
        cable = self.index.cables[cid]
        for near, port in ((cable.a.device, cable.a.port), (cable.b.device, cable.b.port)):
            if (cid, near) in busy:
                continue
            for lid in self.dests(near, port):
                if usable is not None and not usable(lid):
                    continue
                home = self.host_at[lid].leaf
                for leaf in self.feeders(near, lid):
                    if leaf != home:
                        yield leaf, lid

    def crossing(self, cid: str, taken: Set[str] = frozenset()) -> Iterator[tuple[HostPort, HostPort]]:
        """(client, server) pairs whose flow crosses `cid`: every port of each source leaf, for each class;
        not the tests named in `taken`."""
        for leaf, lid in self.classes(cid):
            server = self.host_at[lid]
            for client in self.by_leaf[leaf]:
                if LinkTest(0, server, client).name not in taken:
                    yield client, server

    def walk(self, client: HostPort, server: HostPort,
             busy: Set[tuple[str, str]] = frozenset()) -> tuple[list[str], list[tuple[str, str]]] | None:
        """The route of a planned flow, fast: its cables and each with the device the flow leaves it from; None
        where `route` would say why not (an unrouted LID, an uncabled port, a loop: ask it for the words), or
        where it leaves a cable the way `busy` names ((cable, device left from): a round's flows)."""
        lid = self.routes.lid.get(key(server))
        if lid is None:
            return None
        cables, ways = [client.cable], [(client.cable, client.node)]
        at = client.leaf
        rows, hops = self._rows, self._hops
        for _ in range(MAX_HOPS + 1):
            row = rows.get(at)
            hop = hops.get(at, {}).get(row[lid]) if row is not None else None
            if hop is None:
                return None
            cid, far, host = hop
            if (cid, at) in busy:
                return None
            cables.append(cid)
            ways.append((cid, at))
            if host:
                return (cables, ways) if cid == server.cable else None
            at = far
        return None

    def route(self, client: HostPort, server: HostPort) -> tuple[list[str], str | None]:
        return path(self.index, self.routes, key(client), key(server))
