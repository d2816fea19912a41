"""``ibnetdiscover`` topology output (plain format, also the ``ibdiagnet2.ibnetdiscover`` file).

Linear, single pass; one precompiled regex per line kind (backtracking bounded by
the line length).  Handles tab or space separation, blank lines present or stripped,
``vendid=``/``devid=``/``sysimgguid=``/``switchguid=``/``caguid=``/``rtguid=``
id lines, ``[port](portguid)`` and ibdiagnet's ``[port](label)(portguid)`` forms,
``[ext N]`` (``-g``), ``s=.. w=.. v=..`` (``-f``) and node descriptions containing
``#``, ``"`` and runs of spaces.

Every cable is printed from both ends; links are deduplicated and each cable is
checked to appear from both ends (a complete ibnetdiscover dump is symmetric).
A remote node without its own record, or a one-sided link, means the output was
truncated or edited and raises :class:`ParseError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from clusterforge.parse._common import empty_error, fail, numbered, shorten, split_lines
from clusterforge.util.gcpause import gc_paused
from clusterforge.util.guid import pad_guid

TOOL = "ibnetdiscover"

__all__ = ["IbLink", "IbLinkEnd", "IbNode", "IbTopology", "parse", "to_json"]

NodeKind = Literal["switch", "ca", "router"]


@dataclass(frozen=True, slots=True)
class IbNode:
    kind: NodeKind
    guid: str
    """Node GUID, ``0x`` + 16 lower-case hex digits."""
    name: str
    """Node description (quotes removed, inner spaces/#/quotes kept verbatim)."""
    ports: int
    """Number of ports from the record header (``Switch 65 ...`` -> 65)."""
    vendid: int | None
    devid: int | None
    sysimgguid: str | None
    lid: int | None
    """Switch management LID (``... port 0 lid N``); None for CAs/routers (see link ends)."""
    port0: str | None
    """``enhanced`` or ``base`` for switches, None otherwise."""
    line_no: int


@dataclass(frozen=True, slots=True)
class IbLinkEnd:
    guid: str
    """Node GUID of this end."""
    port: int
    name: str
    """Node description of this end."""
    kind: NodeKind
    port_guid: str | None
    """Port GUID (CA/router ends; switch ports share the switch GUID -> None)."""
    lid: int | None
    """Port LID for CA/router ends, switch LID for switch ends."""
    label: str | None
    """Port label printed by ibdiagnet (``1/1/1``), None for plain ibnetdiscover."""


@dataclass(frozen=True, slots=True)
class IbLink:
    a: IbLinkEnd
    """The end whose record listed the link first (file order)."""
    b: IbLinkEnd
    width: str
    """``4x``, ``1x``, ``8x``, ``12x``, ``2x`` or ``??``."""
    speed: str
    """``SDR``..``NDR``/``XDR``, ``FDR10`` or ``???``."""
    line_no: int


@dataclass(frozen=True, slots=True)
class IbTopology:
    switches: tuple[IbNode, ...]
    cas: tuple[IbNode, ...]
    routers: tuple[IbNode, ...]
    links: tuple[IbLink, ...]


_KIND_BY_TAG: dict[str, NodeKind] = {"Switch": "switch", "Ca": "ca", "Rt": "router"}
_KIND_BY_LETTER: dict[str, NodeKind] = {"S": "switch", "H": "ca", "R": "router"}

_NODE_RE = re.compile(
    r'(Switch|Ca|Rt)[ \t]+(\d+)[ \t]+"([SHR])-([0-9a-fA-F]{1,16})"[ \t]*#[ \t]?"(.*)"(.*)'
)
_SWITCH_TAIL_RE = re.compile(r"\s*(enhanced|base) port 0 lid (\d+) lmc (\d+)\s*")
# one pass over a port line, comment included; the description is greedy up to the
# last '"' that is followed by " lid N <width><speed>", so '#' and '"' inside it are fine
_PORT_RE = re.compile(
    r"\[(\d+)\](?:\[ext \d+\])?(?:\(([^()]*)\))?(?:\(([0-9a-fA-F]{1,16})\))?[ \t]*"
    r'"([SHR])-([0-9a-fA-F]{1,16})"\[(\d+)\](?:\[ext \d+\])?[ \t]*'
    r"(?:\(([0-9a-fA-F]{1,16})\))?[ \t]*#[ \t]?"
    r'(?:lid (\d+) lmc \d+ )?"(.*)"[ \t]*lid (\d+) '
    r"(\d+x|\?\?)(SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR|\?\?\?)(?:[ \t].*)?"
)
_ID_RE = re.compile(
    r"(vendid|devid|sysimgguid|switchguid|caguid|rtguid)=0x([0-9a-fA-F]{1,16})"
    r"(?:\(([0-9a-fA-F]{1,16})\))?(?:[ \t]*#.*)?"
)
_FROM_RE = re.compile(r"# Initiated from node ([0-9a-fA-F]{1,16})\b")
_SKIP_RE = re.compile(r"(?:Chassis \d+.*|Non-Chassis Nodes|Hostname: .*)")
_HEX_RE = re.compile(r"[0-9a-fA-F]{1,16}")


_g = pad_guid


@dataclass(slots=True)
class _Pending:
    """A link seen from its first end; ``b`` is filled when the other end lists it."""

    a: IbLinkEnd
    b_kind: NodeKind
    width: str
    speed: str
    line_no: int
    line: str
    b: IbLinkEnd | None = None


def _node(m: re.Match[str], ids: dict[str, tuple[str, str | None]], idx: int,
          raw: str) -> IbNode:
    tag, nports, letter, guid_hex, desc, tail = m.groups()
    kind = _KIND_BY_TAG[tag]
    if _KIND_BY_LETTER[letter] != kind:
        raise fail(TOOL, idx, raw, f"{tag} record with a {letter}- node name")
    guid = _g(guid_hex)
    lid = port0 = None
    if kind == "switch":
        sm = _SWITCH_TAIL_RE.fullmatch(tail)
        if sm is None:
            raise fail(TOOL, idx, raw, "expected '<enhanced|base> port 0 lid N lmc N' after "
                       f"the switch description, got {tail.strip()!r}")
        port0, lid = sm.group(1), int(sm.group(2))
    elif tail.strip() not in ("", "(scp)"):
        raise fail(TOOL, idx, raw, f"unexpected text after description: {tail!r}")
    own_key = {"switch": "switchguid", "ca": "caguid", "router": "rtguid"}[kind]
    if own_key in ids and ids[own_key][0] != guid:
        raise fail(TOOL, idx, raw, f"{own_key}={ids[own_key][0]} does not match {guid}")
    vend, dev, sysimg = ids.get("vendid"), ids.get("devid"), ids.get("sysimgguid")
    return IbNode(
        kind=kind, guid=guid, name=desc, ports=int(nports),
        vendid=int(vend[0], 16) if vend else None,
        devid=int(dev[0], 16) if dev else None,
        sysimgguid=sysimg[0] if sysimg else None,
        lid=lid, port0=port0, line_no=idx,
    )


def parse(text: str) -> IbTopology:
    """Parse plain ``ibnetdiscover`` output into nodes and deduplicated links."""
    with gc_paused():
        return _parse(text)


def _parse(text: str) -> IbTopology:
    lines = split_lines(text)
    nodes: dict[str, IbNode] = {}
    order: list[IbNode] = []
    ids: dict[str, tuple[str, str | None]] = {}
    pending: dict[tuple[str, int, str, int], _Pending] = {}
    link_order: list[_Pending] = []
    # remote nodes referenced by port lines before their record: guid -> (line_no, line)
    referenced: dict[str, tuple[int, str]] = {}
    cur: IbNode | None = None
    cur_guid = cur_name = ""
    cur_kind: NodeKind = "ca"
    cur_lid: int | None = None
    cur_ports = 0
    cur_is_switch = False
    from_node: str | None = None
    port_match = _PORT_RE.fullmatch
    gcache: dict[str, str] = {}
    kind_by_letter = _KIND_BY_LETTER

    for idx, raw, line in numbered(lines):
        c = line[0]
        if c == "[":
            if cur is None:
                raise fail(TOOL, idx, raw, "port line before any Switch/Ca/Rt record")
            m = port_match(line)
            if m is None:
                raise fail(TOOL, idx, raw, f"malformed port line {shorten(raw)}")
            (lport_s, paren1, paren2, rletter, rhex, rport_s, rpguid, llid, _rdesc, _rlid,
             width, speed) = m.groups()
            lport = int(lport_s)
            if not 0 < lport <= cur_ports:
                raise fail(TOOL, idx, raw, f"port {lport} outside 1..{cur_ports} of this node")
            label: str | None = None
            local_pguid: str | None = None
            if cur_is_switch:
                if paren2 is not None:
                    raise fail(TOOL, idx, raw, "switch port line with a port GUID")
                label = paren1
            elif paren2 is not None:
                label, local_pguid = paren1, _g(paren2)
            elif paren1 is not None and _HEX_RE.fullmatch(paren1):
                local_pguid = _g(paren1)
            else:
                label = paren1
            rguid = gcache.get(rhex)
            if rguid is None:
                rguid = gcache[rhex] = _g(rhex)
            rkind = kind_by_letter[rletter]
            if (rletter == "S") == (rpguid is not None):
                raise fail(TOOL, idx, raw, "remote port GUID must be given for CA/router only")
            rport = int(rport_s)
            key = ((cur_guid, lport, rguid, rport) if (cur_guid, lport) <= (rguid, rport)
                   else (rguid, rport, cur_guid, lport))
            end = IbLinkEnd(cur_guid, lport, cur_name, cur_kind, local_pguid,
                            int(llid) if llid is not None else cur_lid, label)
            seen = pending.get(key)
            if seen is None:
                rnode = nodes.get(rguid)
                if rnode is None:
                    if rguid not in referenced:
                        referenced[rguid] = (idx, raw)
                elif rnode.kind != rkind:
                    raise fail(TOOL, idx, raw, f"node {rguid} is a {rnode.kind}, not {rkind}")
                pl = _Pending(end, rkind, width, speed, idx, raw)
                pending[key] = pl
                link_order.append(pl)
            elif seen.b is not None or (seen.a.guid == cur_guid and seen.a.port == lport):
                raise fail(TOOL, idx, raw, "link listed twice from the same end")
            elif seen.b_kind != cur_kind:
                raise fail(TOOL, idx, raw, f"node {cur_guid} is a {cur_kind}, but the other "
                           f"end of this link (line {seen.line_no}) calls it a {seen.b_kind}")
            else:
                seen.b = end
            continue
        if c == "#":
            if line.startswith("# Initiated from node "):
                fm = _FROM_RE.match(line)
                from_node = _g(fm.group(1)) if fm is not None else None
            continue
        if c in "SCR":
            m = _NODE_RE.fullmatch(line)
            if m is None:
                if _SKIP_RE.fullmatch(line):
                    continue
                raise fail(TOOL, idx, raw, f"malformed node record {shorten(raw)}")
            cur = _node(m, ids, idx, raw)
            if cur.guid in nodes:
                raise fail(TOOL, idx, raw, f"duplicate record for node {cur.guid}")
            nodes[cur.guid] = cur
            order.append(cur)
            ids = {}
            cur_guid, cur_name, cur_kind, cur_lid = cur.guid, cur.name, cur.kind, cur.lid
            cur_ports, cur_is_switch = cur.ports, cur.kind == "switch"
            continue
        m = _ID_RE.fullmatch(line)
        if m is not None:
            key_name = m.group(1)
            if key_name in ids:
                raise fail(TOOL, idx, raw, f"{key_name}= repeated without a node record in between")
            value = m.group(2) if key_name in ("vendid", "devid") else _g(m.group(2))
            ids[key_name] = (value, m.group(3))
            continue
        if _SKIP_RE.fullmatch(line):
            continue
        raise fail(TOOL, idx, raw, f"unrecognised line {shorten(raw)}")

    if not order:
        if not any(ln.strip() for ln in lines):
            raise empty_error(TOOL)
        raise fail(TOOL, len(lines), lines[-1] if lines else "", "no Switch/Ca/Rt records found")
    if ids:
        last = len(lines)
        raise fail(TOOL, last, lines[-1], "id lines without a node record (truncated output?)")
    for guid, (ln, raw) in referenced.items():
        if guid not in nodes:
            raise fail(TOOL, ln, raw, f"remote node {guid} has no record (truncated output?)")

    links: list[IbLink] = []
    for pl in link_order:
        if pl.b is None:
            raise fail(TOOL, pl.line_no, pl.line,
                       "link is listed from one end only (truncated or inconsistent output)")
        links.append(IbLink(a=pl.a, b=pl.b, width=pl.width, speed=pl.speed, line_no=pl.line_no))
    # discovery walks links: every node has one, except a lone node that ran the discovery
    linked = {lk.a.guid for lk in links} | {lk.b.guid for lk in links}
    for node in order:
        if node.guid not in linked and not (
            len(order) == 1 and from_node in (None, node.guid)
        ):
            raise fail(TOOL, node.line_no, lines[node.line_no - 1],
                       f"node {node.guid} has no links (truncated output?)")
    return IbTopology(
        switches=tuple(n for n in order if n.kind == "switch"),
        cas=tuple(n for n in order if n.kind == "ca"),
        routers=tuple(n for n in order if n.kind == "router"),
        links=tuple(links),
    )


def _node_json(n: IbNode) -> dict[str, Any]:
    out: dict[str, Any] = {"guid": n.guid, "name": n.name, "ports": n.ports}
    out["lid"] = n.lid
    out["vendid"] = f"0x{n.vendid:x}" if n.vendid is not None else None
    out["devid"] = f"0x{n.devid:x}" if n.devid is not None else None
    out["sysimgguid"] = n.sysimgguid
    if n.kind == "switch":
        out["port0"] = n.port0
    else:
        del out["lid"]
    return out


def _end_json(e: IbLinkEnd) -> dict[str, Any]:
    return {
        "guid": e.guid,
        "port": e.port,
        "name": e.name,
        "type": e.kind,
        "port_guid": e.port_guid,
        "lid": e.lid,
        "label": e.label,
    }


def to_json(records: IbTopology) -> dict[str, Any]:
    return {
        "switches": [_node_json(n) for n in records.switches],
        "cas": [_node_json(n) for n in records.cas],
        "routers": [_node_json(n) for n in records.routers],
        "links": [
            {"a": _end_json(lk.a), "b": _end_json(lk.b), "width": lk.width, "speed": lk.speed}
            for lk in records.links
        ],
    }
