"""``ibnetdiscover -p`` (ports report): one line per port, both ends of a link inline.

``CA   134  1 0x7cfe9003003b4bde 4x EDR - SW  1719 10 0x7cfe9003009ce5b0 ( 'o1 HCA-1' - 'sw1' )``
or, for a port without a peer, ``SW  2052 37 0x506b4b03005c2740 4x ???   'ib-i4l1s01'``.

The GUID printed is the *port* GUID (for switches all ports share the switch GUID).
Excerpts are accepted (no both-ends check); links are deduplicated by (guid, port).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from clusterforge.parse._common import empty_error, fail, numbered, shorten, split_lines
from clusterforge.util.guid import pad_guid

TOOL = "ibnetdiscover-p"

__all__ = ["IbPortsLink", "IbPortsPeer", "IbPortsRecord", "IbPortsReport", "parse", "to_json"]


@dataclass(frozen=True, slots=True)
class IbPortsPeer:
    type: str
    """``SW``, ``CA``, ``RT`` or ``??``."""
    lid: int
    port: int
    guid: str
    name: str


@dataclass(frozen=True, slots=True)
class IbPortsRecord:
    type: str
    lid: int
    port: int
    guid: str
    width: str
    speed: str
    name: str
    """Node description (verbatim, leading/trailing spaces kept)."""
    peer: IbPortsPeer | None
    line_no: int


@dataclass(frozen=True, slots=True)
class IbPortsLink:
    a: IbPortsPeer
    b: IbPortsPeer
    width: str
    speed: str


@dataclass(frozen=True, slots=True)
class IbPortsReport:
    ports: tuple[IbPortsRecord, ...]
    links: tuple[IbPortsLink, ...]


_T = r"(SW|CA|RT|\?\?)"
_LINE_RE = re.compile(
    _T + r"\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]{1,16})\s+(\d+x|\?\?)\s+"
    r"(SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR|\?\?\?)\s+"
    r"(?:-\s+" + _T + r"\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]{1,16})\s+\( '(.*)' - '(.*)' \)"
    r"|'(.*)')"
)


_g = pad_guid


def parse(text: str) -> IbPortsReport:
    lines = split_lines(text)
    ports: list[IbPortsRecord] = []
    links: dict[tuple[tuple[str, int], tuple[str, int]], IbPortsLink] = {}
    for idx, raw, s in numbered(lines):
        m = _LINE_RE.fullmatch(s)
        if m is None:
            raise fail(TOOL, idx, raw, f"malformed ports-report line {shorten(raw)}")
        (typ, lid, port, guid, width, speed, rtyp, rlid, rport, rguid, name, rname,
         lone_name) = m.groups()
        peer: IbPortsPeer | None = None
        if rtyp is not None:
            peer = IbPortsPeer(type=rtyp, lid=int(rlid), port=int(rport), guid=_g(rguid),
                               name=rname)
        else:
            name = lone_name
        rec = IbPortsRecord(type=typ, lid=int(lid), port=int(port), guid=_g(guid), width=width,
                            speed=speed, name=name, peer=peer, line_no=idx)
        ports.append(rec)
        if peer is not None:
            me = IbPortsPeer(type=typ, lid=rec.lid, port=rec.port, guid=rec.guid, name=name)
            ka, kb = (me.guid, me.port), (peer.guid, peer.port)
            key = (ka, kb) if ka <= kb else (kb, ka)
            if key not in links:
                links[key] = IbPortsLink(a=me, b=peer, width=width, speed=speed)
    if not ports:
        raise empty_error(TOOL)
    return IbPortsReport(ports=tuple(ports), links=tuple(links.values()))


def _peer_json(p: IbPortsPeer) -> dict[str, Any]:
    return {"type": p.type, "lid": p.lid, "port": p.port, "guid": p.guid, "name": p.name}


def to_json(records: IbPortsReport) -> dict[str, Any]:
    return {
        "ports": [
            {
                "type": r.type, "lid": r.lid, "port": r.port, "guid": r.guid,
                "width": r.width, "speed": r.speed, "name": r.name,
                "peer": _peer_json(r.peer) if r.peer is not None else None,
            }
            for r in records.ports
        ],
        "links": [
            {"a": _peer_json(lk.a), "b": _peer_json(lk.b), "width": lk.width, "speed": lk.speed}
            for lk in records.links
        ],
    }
