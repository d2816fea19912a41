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
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Set
from dataclasses import dataclass, field

from ..model.index import Index
from ..validate.routes import Routes, path
from .plan import HostPort

CaKey = tuple[str, str, int]


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
    uplinks: dict[str, int]
    """Leaf -> its cables to other switches."""
    _out: dict[str, dict[int, list[int]]] = field(default_factory=dict)

    @classmethod
    def of(cls, index: Index, routes: Routes, ports: Iterable[HostPort]) -> Flows:
        ports = list(ports)
        into: dict[str, list[tuple[str, int]]] = defaultdict(list)
        ups: dict[str, int] = defaultdict(int)
        for c in index.inv.cables:
            if c.a.hca is None and c.b.hca is None and c.a.device in index.switches \
                    and c.b.device in index.switches:
                into[c.b.device].append((c.a.device, c.a.port))
                into[c.a.device].append((c.b.device, c.b.port))
                ups[c.a.device] += 1
                ups[c.b.device] += 1
        host_at = {routes.lid[key(p)]: p for p in ports if key(p) in routes.lid}
        return cls(index, routes, ports_by_leaf(ports), host_at, dict(into), dict(ups))

    def dests(self, switch: str, port: int) -> list[int]:
        """The planned hosts' LIDs `switch` sends out of `port`, in LID order."""
        by_port = self._out.get(switch)
        if by_port is None:
            by_port = defaultdict(list)
            for lid, out in sorted(self.routes.lft.get(switch, {}).items()):
                if lid in self.host_at:
                    by_port[out].append(lid)
            self._out[switch] = by_port
        return by_port.get(port, [])

    def feeders(self, switch: str, lid: int) -> Iterator[str]:
        """The leaves whose flows to `lid` reach `switch` (it first, then by distance): the tables walked back."""
        seen = {switch}
        queue = [switch]
        for at in queue:
            if at in self.by_leaf:
                yield at
            for w, port in self.into.get(at, ()):
                if w not in seen and self.routes.lft.get(w, {}).get(lid) == port:
                    seen.add(w)
                    queue.append(w)

    def classes(self, cid: str) -> Iterator[tuple[str, int]]:
        """(source leaf, destination LID) of the flows that cross cable `cid`, in either direction: each
        destination the near end sends over it, with each leaf whose flows to it reach the near end."""
        cable = self.index.cables[cid]
        for near, port in ((cable.a.device, cable.a.port), (cable.b.device, cable.b.port)):
            for lid in self.dests(near, port):
                home = self.host_at[lid].leaf
                for leaf in self.feeders(near, lid):
                    if leaf != home:
                        yield leaf, lid

    def crossing(self, cid: str, taken: Set[str] = frozenset()) -> Iterator[tuple[HostPort, HostPort]]:
        """(client, server) pairs whose flow crosses `cid`: every port of each source leaf, for each class;
        not the tests named in `taken`."""
        from .plan import LinkTest

        for leaf, lid in self.classes(cid):
            server = self.host_at[lid]
            for client in self.by_leaf[leaf]:
                if LinkTest(0, server, client).name not in taken:
                    yield client, server

    def route(self, client: HostPort, server: HostPort) -> tuple[list[str], str | None]:
        return path(self.index, self.routes, key(client), key(server))

    def directed(self, client: HostPort, cables: list[str]) -> list[tuple[str, str]]:
        """Each cable of a route with the device the flow leaves it from: a cable carries one flow each way
        at full rate."""
        at = client.node
        out: list[tuple[str, str]] = []
        for cid in cables:
            c = self.index.cables[cid]
            out.append((cid, at))
            at = c.b.device if c.a.device == at else c.a.device
        return out
