"""What the simulated fabric looks like right now, from ibnetdiscover / iblinkinfo.

Small parsers for the output of the diag tools as run against ibsim; nodes
are keyed by their node description (ibsim sets it from the net file).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: iblinkinfo prints the active per-lane signalling rate; map it to a name.
GBPS_TO_SPEED = {
    "2.5": "SDR", "5.0": "DDR", "10.0": "QDR", "14.0625": "FDR", "25.78125": "EDR",
    "53.125": "HDR", "106.25": "NDR", "212.5": "XDR",
}

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


_NODE = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([^"]+)"\s*#\s*"([^"]*)"(.*)$')
_SW_PORT = re.compile(r'^\[(\d+)\]\s+"([^"]+)"\[(\d+)\](?:\([0-9a-fA-F]+\))?\s*#\s*"([^"]*)"'
                      r"\s+lid\s+(\d+)\s+(\S+)")
_CA_PORT = re.compile(r'^\[(\d+)\](?:\([0-9a-fA-F]+\))?\s+"([^"]+)"\[(\d+)\]'
                      r'(?:\([0-9a-fA-F]+\))?\s*#\s*lid\s+(\d+)\s+lmc\s+\d+\s+"([^"]*)"'
                      r"\s+lid\s+(\d+)\s+(\S+)")


def parse_ibnetdiscover(text: str) -> Discovery:
    disc = Discovery()
    guid_to_desc: dict[str, str] = {}
    pending: list[tuple[PortKey, str, int, str]] = []  # (here, peer guid, peer port, rate)
    current: DiscoveredNode | None = None
    for raw in text.splitlines():
        line = raw.strip()
        m = _NODE.match(line)
        if m:
            kind = "Ca" if m.group(1) in ("Ca", "Rt") else "Switch"
            lid_m = re.search(r"\blid\s+(\d+)", m.group(5))
            lid = int(lid_m.group(1)) if (kind == "Switch" and lid_m) else None
            current = DiscoveredNode(m.group(3), kind, m.group(4), int(m.group(2)), lid)
            disc.nodes[current.desc] = current
            guid_to_desc[current.guid] = current.desc
            continue
        if current is None or not line.startswith("["):
            continue
        if current.kind == "Switch":
            sm = _SW_PORT.match(line)
            if sm:
                here = (current.desc, int(sm.group(1)))
                pending.append((here, sm.group(2), int(sm.group(3)), sm.group(6)))
        else:
            cm = _CA_PORT.match(line)
            if cm:
                here = (current.desc, int(cm.group(1)))
                disc.port_lids[here] = int(cm.group(4))
                pending.append((here, cm.group(2), int(cm.group(3)), cm.group(7)))
    for here, peer_guid, peer_port, rate in pending:
        peer_desc = guid_to_desc.get(peer_guid)
        if peer_desc is None:
            continue
        there = (peer_desc, peer_port)
        key = frozenset((here, there))
        if key not in disc.links:
            a, b = sorted((here, there))
            disc.links[key] = DiscoveredLink(a, b, rate)
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


_LINK = re.compile(
    r"^(?:0x[0-9a-fA-F]+\s+)?\d+\s+(\d+)\[\s*\]\s+==\(\s*"
    r"(?:(\d+X)\s+([\d.]+)\s+Gbps\s+)?(\w+)/\s*(\w+)\)==>\s*(.*)$"
)
_PEER = re.compile(r'^\d+\s+(\d+)\[\s*\]\s+"([^"]*)"')


def parse_iblinkinfo(text: str) -> dict[PortKey, PortLink]:
    out: dict[PortKey, PortLink] = {}
    node: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("CA: "):
            node = line[4:].rstrip(":")
            continue
        if line.startswith("Switch: "):
            rest = line[len("Switch: ") :].rstrip(":")
            parts = rest.split(None, 1)
            node = parts[1] if len(parts) == 2 else parts[0]
            continue
        if node is None:
            continue
        m = _LINK.match(line)
        if not m:
            continue
        port = int(m.group(1))
        width = m.group(2)
        speed = GBPS_TO_SPEED.get(m.group(3) or "") if m.group(3) else None
        pm = _PEER.match(m.group(6).strip())
        peer = (pm.group(2), int(pm.group(1))) if pm and pm.group(2) else None
        out[(node, port)] = PortLink((node, port), width, speed, m.group(4), m.group(5), peer)
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
    cas: list[IbStatCa] = []
    name: str | None = None
    guid = ""
    ports: list[IbStatPort] = []
    cur: dict[str, str] = {}

    def flush_port() -> None:
        if cur:
            ports.append(
                IbStatPort(
                    int(cur["port"]), cur.get("State", ""), cur.get("Physical state", ""),
                    cur.get("Rate", ""), int(cur.get("Base lid", "0") or 0),
                )
            )
            cur.clear()

    def flush_ca() -> None:
        flush_port()
        if name is not None:
            cas.append(IbStatCa(name, guid, tuple(ports)))
        ports.clear()

    for raw in text.splitlines():
        m = re.match(r"^CA '([^']+)'", raw)
        if m:
            flush_ca()
            name, guid = m.group(1), ""
            continue
        pm = re.match(r"^\s+Port (\d+):\s*$", raw)
        if pm:
            flush_port()
            cur["port"] = pm.group(1)
            continue
        if ":" in raw:
            k, v = raw.strip().split(":", 1)
            if cur:
                cur[k.strip()] = v.strip()
            elif k.strip() == "Node GUID":
                guid = v.strip()
    flush_ca()
    return cas
