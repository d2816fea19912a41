"""``iblinkinfo`` (default, non ``-l`` layout): per-node sections with one line per port.

``CA: <desc>:`` / ``Switch: 0x<guid> <desc>:`` / ``Router: <desc>:`` headers, then::

    0x0002c90300002779      4    1[  ] ==( 4X      5.0 Gbps Active/  LinkUp)==>  3  1[  ] "kvm" ( )
               2    5[  ] ==(                Down/ Polling)==>             [  ] "" ( )

(spacing shortened here).

Down ports have no width/speed and an empty peer; ``( Could be ... )`` hints are kept;
``"Port not available"`` peers are accepted.  Links are deduplicated by (lid, port) pairs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from clusterforge.parse._common import empty_error, fail, numbered, shorten, split_lines
from clusterforge.util.guid import pad_guid

TOOL = "iblinkinfo"

__all__ = [
    "IblinkinfoLink", "IblinkinfoNode", "IblinkinfoPeer", "IblinkinfoPort", "IblinkinfoReport",
    "parse", "to_json",
]

# Gbps figure (per lane) printed by iblinkinfo -> IB speed name
SPEED_NAMES = {
    "2.5": "SDR", "5.0": "DDR", "10.0": "QDR", "14.0625": "FDR", "25.78125": "EDR",
    "53.125": "HDR", "106.25": "NDR", "212.5": "XDR",
}


@dataclass(frozen=True, slots=True)
class IblinkinfoPeer:
    lid: int
    port: int
    name: str


@dataclass(frozen=True, slots=True)
class IblinkinfoPort:
    port: int
    lid: int
    """Port LID (CA) or switch LID (switch)."""
    port_guid: str | None
    """Printed for CA/router ports only."""
    width: str | None
    """Lower-case like ibnetdiscover (``4x``); None when the port is down."""
    speed: str | None
    """IB speed name (``HDR``) when the Gbps figure is a known one, else the raw text."""
    speed_gbps: float | None
    """Per-lane signalling rate as printed (``53.125``)."""
    state: str
    physical_state: str
    peer: IblinkinfoPeer | None
    """None for a down port (``[  ] ""``) or ``"Port not available"``."""
    hints: tuple[str, ...]
    """``Could be ...`` texts from the trailing parentheses."""
    line_no: int


@dataclass(frozen=True, slots=True)
class IblinkinfoNode:
    type: str
    """``CA``, ``Switch`` or ``Router``."""
    guid: str | None
    """Switch GUID from the header; None for CA/router sections (see ports' port_guid)."""
    name: str
    ports: tuple[IblinkinfoPort, ...]


@dataclass(frozen=True, slots=True)
class IblinkinfoLink:
    a: IblinkinfoPeer
    b: IblinkinfoPeer
    width: str | None
    speed: str | None


@dataclass(frozen=True, slots=True)
class IblinkinfoReport:
    nodes: tuple[IblinkinfoNode, ...]
    links: tuple[IblinkinfoLink, ...]


_SW_HDR_RE = re.compile(r"Switch: 0x([0-9a-fA-F]{1,16}) (.*):")
_NODE_HDR_RE = re.compile(r"(CA|Router|\?\?): (.*):")
_PORT_RE = re.compile(
    r"(?:0x([0-9a-fA-F]{1,16})\s+)?(\d+)\s+(\d+)\[([^\]]*)\]\s+==\((.*)\)==>\s*(.*)"
)
_PEER_RE = re.compile(r'(?:(\d+)\s+(\d+))?\s*\[([^\]]*)\]\s+"(.*)"\s+\((.*)\)')
_HOQ_RE = re.compile(r"\) \(HOQ:\d+ VL_Stall:\d+$")
_HINT_RE = re.compile(r"Could be (.+?)(?=\s*Could be |\s*$)")
_SPEED_RE = re.compile(r"(\d+(?:\.\d+)?) Gbps(?: \((FDR10)\))?")


def _link_state(inner: str, ctx: tuple[int, str]) -> tuple[str | None, str | None, float | None,
                                                          str, str]:
    inner = _HOQ_RE.sub("", inner)
    slash = inner.rfind("/")
    if slash < 0:
        raise fail(TOOL, ctx[0], ctx[1], "expected '<state>/<physical state>' in the link field")
    before = inner[:slash].split()
    phys = inner[slash + 1:].strip()
    if not before or not phys:
        raise fail(TOOL, ctx[0], ctx[1], "empty port state")
    state = before[-1]
    rest = before[:-1]
    if not rest:
        return None, None, None, state, phys
    width = rest[0].lower()
    speed_txt = " ".join(rest[1:])
    sm = _SPEED_RE.fullmatch(speed_txt)
    if sm is None:
        raise fail(TOOL, ctx[0], ctx[1], f"unrecognised speed {speed_txt!r}")
    gbps = sm.group(1)
    speed = "FDR10" if sm.group(2) else SPEED_NAMES.get(gbps, speed_txt)
    return width, speed, float(gbps), state, phys


def parse(text: str) -> IblinkinfoReport:
    lines = split_lines(text)
    nodes: list[IblinkinfoNode] = []
    cur: tuple[str, str | None, str] | None = None
    cur_at: tuple[int, str] = (1, "")
    cur_ports: list[IblinkinfoPort] = []
    links: dict[tuple[tuple[int, int], tuple[int, int]], IblinkinfoLink] = {}

    def close() -> None:
        if cur is not None:
            if not cur_ports:
                raise fail(TOOL, cur_at[0], cur_at[1], f"node {cur[2]!r} has no port lines")
            nodes.append(IblinkinfoNode(type=cur[0], guid=cur[1], name=cur[2],
                                        ports=tuple(cur_ports)))

    for idx, raw, s in numbered(lines):
        pm = _PORT_RE.fullmatch(s)
        if pm is not None and cur is not None:
            pguid, lid, port, _ext, inner, remote = pm.groups()
            if (pguid is None) != (cur[0] == "Switch"):
                raise fail(TOOL, idx, raw, "port GUID column present/absent for this node type")
            width, speed, gbps, state, phys = _link_state(inner, (idx, raw))
            peer: IblinkinfoPeer | None = None
            hints: tuple[str, ...] = ()
            if remote != '"Port not available"':
                rm = _PEER_RE.fullmatch(remote)
                if rm is None:
                    raise fail(TOOL, idx, raw, f"malformed peer field {shorten(remote)}")
                rlid, rport, _rext, rname, hint_txt = rm.groups()
                hints = tuple(h.strip() for h in _HINT_RE.findall(hint_txt))
                if rlid is not None:
                    peer = IblinkinfoPeer(lid=int(rlid), port=int(rport), name=rname)
                elif rname:
                    raise fail(TOOL, idx, raw, "peer name without LID/port")
            rec = IblinkinfoPort(
                port=int(port), lid=int(lid),
                port_guid=pad_guid(pguid) if pguid else None,
                width=width, speed=speed, speed_gbps=gbps, state=state, physical_state=phys,
                peer=peer, hints=hints, line_no=idx,
            )
            cur_ports.append(rec)
            if peer is not None:
                me = IblinkinfoPeer(lid=rec.lid, port=rec.port, name=cur[2])
                ka, kb = (me.lid, me.port), (peer.lid, peer.port)
                key = (ka, kb) if ka <= kb else (kb, ka)
                if key not in links:
                    links[key] = IblinkinfoLink(a=me, b=peer, width=width, speed=speed)
            continue
        sm = _SW_HDR_RE.fullmatch(s)
        nm = _NODE_HDR_RE.fullmatch(s) if sm is None else None
        if sm is None and nm is None:
            if cur is None:
                raise fail(TOOL, idx, raw, "expected 'CA: <desc>:' or 'Switch: 0x<guid> <desc>:',"
                           f" got {shorten(raw)}")
            raise fail(TOOL, idx, raw, f"malformed port line {shorten(raw)}")
        close()
        cur_ports = []
        cur_at = (idx, raw)
        if sm is not None:
            cur = ("Switch", pad_guid(sm.group(1)), sm.group(2))
        elif nm is not None:
            cur = (nm.group(1), None, nm.group(2))
    if cur is None:
        raise empty_error(TOOL)
    close()
    return IblinkinfoReport(nodes=tuple(nodes), links=tuple(links.values()))


def _peer_json(p: IblinkinfoPeer) -> dict[str, Any]:
    return {"lid": p.lid, "port": p.port, "name": p.name}


def to_json(records: IblinkinfoReport) -> dict[str, Any]:
    return {
        "nodes": [
            {
                "type": n.type,
                "guid": n.guid,
                "name": n.name,
                "ports": [
                    {
                        "port": p.port, "lid": p.lid, "port_guid": p.port_guid,
                        "width": p.width, "speed": p.speed, "speed_gbps": p.speed_gbps,
                        "state": p.state, "physical_state": p.physical_state,
                        "peer": _peer_json(p.peer) if p.peer is not None else None,
                        "hints": list(p.hints),
                    }
                    for p in n.ports
                ],
            }
            for n in records.nodes
        ],
        "links": [
            {"a": _peer_json(lk.a), "b": _peer_json(lk.b), "width": lk.width, "speed": lk.speed}
            for lk in records.links
        ],
    }
