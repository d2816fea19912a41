"""Read an ibsim net file (the ibnetdiscover-like format ibsim 0.10 accepts).

Only what the lab needs: nodes, their descriptions, the cabling and the
enabled link width/speed of every port, computed with the same rules as
ibsim's own parser (ibsim/sim_net.c):

* ``width=N`` / ``speed=N`` / ``extspeed=N`` lines set the *enabled* masks of
  every port of every node record that FOLLOWS them;
* a port line may override them with options anywhere after the peer:
  ``w=N``, ``s=N``, ``e=N`` (ibsim scans the whole rest of the line for '=',
  so a comment containing '=' on a port line is parsed as an option!);
* a port line that carries ibnetdiscover connection data after the last
  quote (``... "peer" lid 3 4xHDR``) sets the width and speed from it;
* the active rate of a link is the best rate enabled on BOTH ends.

``include``, ``module``, ``do`` and ``@alias`` lines are rejected: the lab
must be able to reason about every link.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from clusterforge.lab.errors import NetFileError

# PortInfo LinkWidthEnabled / LinkSpeedEnabled / LinkSpeedExtEnabled bits.
WIDTH_BITS: dict[str, int] = {"1X": 1, "4X": 2, "8X": 4, "12X": 8, "2X": 16}
SPEED_BITS: dict[str, int] = {"SDR": 1, "DDR": 2, "QDR": 4}
EXT_SPEED_BITS: dict[str, int] = {"FDR": 1, "EDR": 2, "HDR": 4, "NDR": 8}
LANE_GBPS: dict[str, float] = {
    "SDR": 2.5, "DDR": 5.0, "QDR": 10.0, "FDR": 14.0, "EDR": 25.0, "HDR": 50.0, "NDR": 100.0,
}
LANES: dict[str, int] = {"1X": 1, "2X": 2, "4X": 4, "8X": 8, "12X": 12}

_WIDTH_ORDER = ("12X", "8X", "4X", "2X", "1X")  # ibsim get_active_linkwidth
_EXT_ORDER = ("NDR", "HDR", "EDR", "FDR")
_SPEED_ORDER = ("QDR", "DDR", "SDR")

_CONN = re.compile(r"lid\s+(\d+)\s+(\d+)x(\w+)")


@dataclass(frozen=True)
class PortSettings:
    width_enabled: int
    speed_enabled: int
    ext_enabled: int


@dataclass(frozen=True)
class NetNode:
    node_id: str
    kind: str  # "Switch" | "Ca" | "Rt"
    nports: int
    desc: str


@dataclass(frozen=True)
class Endpoint:
    node: str
    port: int

    def __str__(self) -> str:
        return f'"{self.node}"[{self.port}]'


@dataclass
class NetFile:
    path: Path
    nodes: dict[str, NetNode] = field(default_factory=dict)
    peers: dict[Endpoint, Endpoint] = field(default_factory=dict)
    settings: dict[Endpoint, PortSettings] = field(default_factory=dict)

    # -- lookups ---------------------------------------------------------
    def resolve(self, name: str) -> str:
        """Node id for an ibsim node id or a node description."""
        if name in self.nodes:
            return name
        matches = [n.node_id for n in self.nodes.values() if n.desc == name]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise NetFileError(f"{self.path}: no node with id or description {name!r}")
        raise NetFileError(f"{self.path}: description {name!r} is not unique: {matches}")

    def endpoint(self, name: str, port: int) -> Endpoint:
        node = self.nodes[self.resolve(name)]
        if not 1 <= port <= node.nports:
            raise NetFileError(f"{node.node_id} has ports 1..{node.nports}, not {port}")
        return Endpoint(node.node_id, port)

    def links(self) -> Iterator[tuple[Endpoint, Endpoint]]:
        """Every cable once, switch side (or lower id) first."""
        for a, b in sorted(self.peers.items(), key=lambda kv: (kv[0].node, kv[0].port)):
            if _order(a, b, self.nodes) <= _order(b, a, self.nodes):
                yield a, b

    def link_rate(self, a: Endpoint) -> tuple[str, str] | None:
        """(width, speed) the simulator will make active on a's cable, e.g. ("4X", "HDR")."""
        b = self.peers.get(a)
        if b is None:
            return None
        return active_rate(self.settings[a], self.settings[b])

    def switches(self) -> list[NetNode]:
        return [n for n in self.nodes.values() if n.kind == "Switch"]

    def cas(self) -> list[NetNode]:
        return [n for n in self.nodes.values() if n.kind == "Ca"]


def _order(a: Endpoint, b: Endpoint, nodes: dict[str, NetNode]) -> tuple[int, str, int]:
    return (0 if nodes[a.node].kind == "Switch" else 1, a.node, a.port)


def active_rate(a: PortSettings, b: PortSettings) -> tuple[str, str]:
    width_common = a.width_enabled & b.width_enabled
    width = next((w for w in _WIDTH_ORDER if width_common & WIDTH_BITS[w]), "")
    ext_common = a.ext_enabled & b.ext_enabled
    speed = next((s for s in _EXT_ORDER if ext_common & EXT_SPEED_BITS[s]), "")
    if not speed:
        common = a.speed_enabled & b.speed_enabled
        speed = next((s for s in _SPEED_ORDER if common & SPEED_BITS[s]), "")
    if not width or not speed:
        raise NetFileError(f"no common width/speed between {a} and {b}: ibsim would abort")
    return width, speed


def rate_gbps(width: str, speed: str) -> float:
    return LANES[width] * LANE_GBPS[speed]


def _quoted(text: str) -> tuple[str, str]:
    """First "..." in text and what follows it."""
    start = text.find('"')
    end = text.find('"', start + 1) if start >= 0 else -1
    if start < 0 or end < 0:
        raise NetFileError(f"no quoted id in {text!r}")
    return text[start + 1 : end], text[end + 1 :]


def _desc(rest: str, default: str) -> str:
    hash_at = rest.find("#")
    if hash_at < 0:
        return default
    s = rest[hash_at + 1 :].lstrip()
    if s.startswith('"'):
        end = s.find('"', 1)
        return s[1:end] if end > 0 else s[1:]
    for marker in (" enhanced port ", " base port ", " lid ", " lmc "):
        cut = s.find(marker)
        if cut >= 0:
            s = s[:cut]
            break
    return s.strip() or default


def _int(value: str, what: str, lineno: int, path: Path) -> int:
    try:
        return int(value.strip().split()[0], 0)
    except (ValueError, IndexError) as exc:
        raise NetFileError(f"{path}:{lineno}: bad {what} {value!r}") from exc


def _width_from_conn(width: int) -> int:
    return {12: 1 | 2 | 8, 8: 4, 4: 1 | 2, 2: 16, 1: 1}.get(width, 0)


def _speed_from_conn(speed: str) -> tuple[int, int] | None:
    """(speed_enabled, ext_enabled or 0=unchanged) for an ibnetdiscover speed word.

    Same matching as ibsim: the word read from the file must be a prefix of
    the speed name, tried in ibsim's order.  SDR/DDR/QDR/FDR10 leave the
    extended-speed mask untouched (so a global extspeed still wins).
    """
    table = (
        ("SDR", (1, 0)), ("DDR", (3, 0)), ("QDR", (7, 0)), ("FDR", (7, 1)),
        ("EDR", (7, 3)), ("HDR", (7, 7)), ("NDR", (7, 15)), ("FDR10", (7, 0)),
    )
    for word, value in table:
        if word.startswith(speed):
            return value
    return None


def parse_netfile(path: Path) -> NetFile:
    lines = path.read_text().splitlines()
    net = NetFile(path=path)
    width, speed, ext = 0, 0, 0
    raw_peer: dict[Endpoint, Endpoint] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        lineno = i + 1
        i += 1
        for kw in ("include", "module", "do"):
            if line.startswith(kw):
                raise NetFileError(f"{path}:{lineno}: '{kw}' lines are not supported by the lab")
        if line.startswith("extspeed"):
            ext = _int(line.split("=", 1)[1], "extspeed", lineno, path)
            continue
        if line.startswith("width"):
            width = _int(line.split("=", 1)[1], "width", lineno, path)
            continue
        if line.startswith("speed"):
            speed = _int(line.split("=", 1)[1], "speed", lineno, path)
            continue
        kind = None
        if line.startswith("Switch"):
            kind, skip = "Switch", 6
        elif line.startswith("Hca"):
            kind, skip = "Ca", 3
        elif line.startswith("Ca"):
            kind, skip = "Ca", 2
        elif line.startswith("Rt"):
            kind, skip = "Rt", 2
        if kind is None:
            continue  # ibsim ignores every other line
        m = re.search(r"\d+", line[skip:])
        if not m:
            raise NetFileError(f"{path}:{lineno}: no port count in {line!r}")
        nports = int(m.group(0))
        node_id, rest = _quoted(line)
        if "#" in node_id or "@" in node_id:
            raise NetFileError(f"{path}:{lineno}: '#' and '@' are reserved in node ids")
        if node_id in net.nodes:
            raise NetFileError(f"{path}:{lineno}: node id {node_id!r} defined twice")
        if len(node_id) > 31:
            raise NetFileError(
                f"{path}:{lineno}: node id {node_id!r} is longer than 31 chars "
                "(SIM_HOST could not select it)"
            )
        net.nodes[node_id] = NetNode(node_id, kind, nports, _desc(rest, node_id))
        for p in range(1, nports + 1):
            net.settings[Endpoint(node_id, p)] = PortSettings(width, speed, ext)
        # port lines
        while i < len(lines):
            pline = lines[i]
            if pline.startswith("#"):
                i += 1
                continue
            if pline.startswith("@"):
                raise NetFileError(f"{path}:{i + 1}: '@' alias ports are not supported")
            if not pline.startswith("["):
                break
            i += 1
            _parse_port(pline, i, path, node_id, nports, net, raw_peer)
    for a, b in raw_peer.items():
        if b.node not in net.nodes:
            raise NetFileError(f"{path}: {a} is cabled to unknown node {b.node!r}")
        if not 1 <= b.port <= net.nodes[b.node].nports:
            raise NetFileError(f"{path}: {a} is cabled to missing port {b}")
        if raw_peer.get(b) != a:
            raise NetFileError(f"{path}: {a} -> {b} but {b} -> {raw_peer.get(b)}")
    net.peers = raw_peer
    for a, _b in net.links():
        active_rate(net.settings[a], net.settings[net.peers[a]])
    return net


def _parse_port(
    line: str,
    lineno: int,
    path: Path,
    node_id: str,
    nports: int,
    net: NetFile,
    raw_peer: dict[Endpoint, Endpoint],
) -> None:
    m = re.match(r"\[(\d+)\]", line)
    if not m:
        raise NetFileError(f"{path}:{lineno}: bad port line {line!r}")
    port = int(m.group(1))
    if not 1 <= port <= nports:
        raise NetFileError(f"{path}:{lineno}: port {port} outside 1..{nports}")
    here = Endpoint(node_id, port)
    if here in raw_peer:
        raise NetFileError(f"{path}:{lineno}: port {port} of {node_id} listed twice")
    peer, rest = _quoted(line)
    peer_port = 1
    pm = re.match(r"\[(\d+)\]", rest)
    if pm:
        peer_port = int(pm.group(1))
    raw_peer[here] = Endpoint(peer, peer_port)
    st = net.settings[here]
    w, s, e = st.width_enabled, st.speed_enabled, st.ext_enabled
    # options: every '=' in the rest of the line, named by the nearest letter before it
    for om in re.finditer(r"=", rest):
        j = om.start() - 1
        while j >= 0 and not rest[j].isalpha():
            j -= 1
        if j < 0:
            raise NetFileError(f"{path}:{lineno}: bad port option in {line!r}")
        value = _int(rest[om.start() + 1 :], "port option", lineno, path)
        if rest[j] == "w":
            w = value
        elif rest[j] == "s":
            s = value or 4
        elif rest[j] == "e":
            e = value
    cm = re.search(r"lid[^\"]*$", rest)
    if cm:
        conn = _CONN.match(cm.group(0))
        if conn:
            w = _width_from_conn(int(conn.group(2))) or w
            sp = _speed_from_conn(conn.group(3))
            if sp is not None:
                s, e = sp if sp[1] else (sp[0], e)
    net.settings[here] = PortSettings(w, s, e)
