"""What the simulated fabric looks like right now, from ibnetdiscover / iblinkinfo / ibstat.

The lab's views of the diag tools' output, keyed by node description (ibsim sets it from the
net file): the text is parsed by clusterforge.parse (the one parser of each tool, strict: an
output that is cut or inconsistent raises its ParseError) and only re-keyed here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clusterforge.parse import iblinkinfo as _iblinkinfo
from clusterforge.parse import ibnetdiscover as _ibnetdiscover
from clusterforge.parse import ibstat as _ibstat
from clusterforge.parse.errors import ParseError

__all__ = [
    "GBPS_TO_SPEED", "DiscoveredLink", "DiscoveredNode", "Discovery", "IbStatCa", "IbStatPort", "ParseError",
    "PortKey", "PortLink", "parse_iblinkinfo", "parse_ibnetdiscover", "parse_ibstat",
]

#: iblinkinfo prints the active per-lane signalling rate; its speed name (parse/iblinkinfo's table).
GBPS_TO_SPEED = _iblinkinfo.SPEED_NAMES

PortKey = tuple[str, int]  # (node description, port number)


@dataclass(frozen=True)
class DiscoveredNode:
    guid: str
    kind: str  # "Switch" | "Ca"
    desc: str
    nports: int
    lid: int | None  # switch: its (port 0) lid; CA: None (see port_lids)


@dataclass(frozen=True)
class DiscoveredLink:
    a: PortKey
    b: PortKey
    rate: str  # "4xHDR" as ibnetdiscover prints it


@dataclass
class Discovery:
    nodes: dict[str, DiscoveredNode] = field(default_factory=dict)  # by desc
    links: dict[frozenset[PortKey], DiscoveredLink] = field(default_factory=dict)
    port_lids: dict[PortKey, int] = field(default_factory=dict)

    def peer(self, key: PortKey) -> PortKey | None:
        for link in self.links.values():
            if link.a == key:
                return link.b
            if link.b == key:
                return link.a
        return None

    def rate(self, key: PortKey) -> str | None:
        for link in self.links.values():
            if key in (link.a, link.b):
                return link.rate
        return None

    def directed_route(self, src: str, dst: str) -> str:
        """Directed-route path ("0,1,7,1") from node ``src`` to node ``dst`` (descriptions).

        DR SMPs need no LIDs or forwarding tables, so they work while the SM
        is re-sweeping after a fault (and without any SM at all).
        """
        adj: dict[str, list[tuple[int, str]]] = {}
        for link in self.links.values():
            adj.setdefault(link.a[0], []).append((link.a[1], link.b[0]))
            adj.setdefault(link.b[0], []).append((link.b[1], link.a[0]))
        paths: dict[str, list[int]] = {src: []}
        queue = [src]
        while queue:
            node = queue.pop(0)
            if node == dst:
                return ",".join(["0", *map(str, paths[node])])
            for port, peer in sorted(adj.get(node, [])):
                if peer not in paths:
                    paths[peer] = [*paths[node], port]
                    queue.append(peer)
        raise KeyError(f"{dst!r} is not reachable from {src!r}")

    def lid_of(self, key: PortKey) -> int | None:
        """LID that addresses this port: the switch lid, or the CA port's own lid."""
        node = self.nodes.get(key[0])
        if node is not None and node.kind == "Switch":
            return node.lid
        return self.port_lids.get(key)


def parse_ibnetdiscover(text: str) -> Discovery:
    """ibnetdiscover's topology by node description; ParseError for output that is not complete."""
    topo = _ibnetdiscover.parse(text)
    disc = Discovery()
    for n in (*topo.switches, *topo.cas, *topo.routers):
        kind = "Switch" if n.kind == "switch" else "Ca"
        disc.nodes[n.name] = DiscoveredNode(n.guid, kind, n.name, n.ports, n.lid if kind == "Switch" else None)
    for lk in topo.links:
        ends = []
        for e in (lk.a, lk.b):
            key = (e.name, e.port)
            if e.kind != "switch" and e.lid is not None:
                disc.port_lids[key] = e.lid
            ends.append(key)
        a, b = sorted(ends)
        disc.links.setdefault(frozenset((a, b)), DiscoveredLink(a, b, f"{lk.width}{lk.speed}"))
    return disc


@dataclass(frozen=True)
class PortLink:
    """One line of iblinkinfo: the state of a port and who it reaches."""

    key: PortKey
    width: str | None  # "4X"
    speed: str | None  # "HDR"
    state: str  # Active / Initialize / Armed / Down
    phys: str  # LinkUp / Polling / Disabled / ...
    peer: PortKey | None

    @property
    def rate(self) -> str | None:
        return f"{self.width}{self.speed}" if self.width and self.speed else None


def parse_iblinkinfo(text: str) -> dict[PortKey, PortLink]:
    """iblinkinfo's ports by (node description, port); ParseError for output that is not complete."""
    out: dict[PortKey, PortLink] = {}
    for node in _iblinkinfo.parse(text).nodes:
        for p in node.ports:
            key = (node.name, p.port)
            peer = (p.peer.name, p.peer.port) if p.peer is not None and p.peer.name else None
            width = p.width.upper() if p.width is not None else None
            out[key] = PortLink(key, width, p.speed if width else None, p.state, p.physical_state, peer)
    return out


@dataclass(frozen=True)
class IbStatPort:
    port: int
    state: str
    phys: str
    rate: str
    lid: int


@dataclass(frozen=True)
class IbStatCa:
    name: str
    node_guid: str
    ports: tuple[IbStatPort, ...]


def parse_ibstat(text: str) -> list[IbStatCa]:
    """ibstat's CAs; ParseError for output that is not complete."""
    return [
        IbStatCa(ca.ca, ca.node_guid or "", tuple(
            IbStatPort(p.port, p.state, p.physical_state, f"{p.rate:g}", p.base_lid) for p in ca.ports))
        for ca in _ibstat.parse(text)
    ]
