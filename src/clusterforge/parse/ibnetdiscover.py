"""``ibnetdiscover`` topology output (plain format, also the ``ibdiagnet2.ibnetdiscover`` file).

Linear, single pass; one precompiled regex per line kind, no backtracking-prone
patterns.  Handles tab or space separation, blank lines present or stripped,
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

from clusterforge.parse._common import empty_error, fail, shorten, split_lines

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
_PORT_RE = re.compile(
    r"\[(\d+)\](?:\[ext \d+\])?(?:\(([^()]*)\))?(?:\(([0-9a-fA-F]{1,16})\))?[ \t]*"
    r'"([SHR])-([0-9a-fA-F]{1,16})"\[(\d+)\](?:\[ext \d+\])?[ \t]*'
    r"(?:\(([0-9a-fA-F]{1,16})\))?[ \t]*#[ \t]?(.*)"
)
_LOCAL_LID_RE = re.compile(r"lid (\d+) lmc (\d+) ")
_TAIL_RE = re.compile(
    r"[ \t]*lid (\d+) (\d+x|\?\?)(SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR|\?\?\?)\b.*"
)
_ID_RE = re.compile(
    r"(vendid|devid|sysimgguid|switchguid|caguid|rtguid)=0x([0-9a-fA-F]{1,16})"
    r"(?:\(([0-9a-fA-F]{1,16})\))?(?:[ \t]*#.*)?"
)
_FROM_RE = re.compile(r"# Initiated from node ([0-9a-fA-F]{1,16})\b")
_SKIP_RE = re.compile(r"(?:Chassis \d+.*|Non-Chassis Nodes|Hostname: .*)")
_HEX_RE = re.compile(r"[0-9a-fA-F]{1,16}")


def _g(hexdigits: str) -> str:
    return "0x" + hexdigits.lower().rjust(16, "0")


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


def parse(text: str) -> IbTopology:
    """Parse plain ``ibnetdiscover`` output into nodes and deduplicated links."""
    lines = split_lines(text)
    nodes: dict[str, IbNode] = {}
    order: list[IbNode] = []
    ids: dict[str, tuple[str, str | None]] = {}
    pending: dict[tuple[str, int, str, int], _Pending] = {}
    link_order: list[_Pending] = []
    # remote nodes referenced by port lines: guid -> (line_no, line)
    referenced: dict[str, tuple[int, str]] = {}
    cur: IbNode | None = None
    from_node: str | None = None
    node_re_match = _NODE_RE.fullmatch
    port_re_match = _PORT_RE.fullmatch
    tail_match = _TAIL_RE.fullmatch
    guid_cache: dict[str, str] = {}

    def g(hexdigits: str) -> str:
        out = guid_cache.get(hexdigits)
        if out is None:
            out = guid_cache[hexdigits] = _g(hexdigits)
        return out

    for idx, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if line[0] == "#":
            if line.startswith("# Initiated from node "):
                fm = _FROM_RE.match(line)
                from_node = g(fm.group(1)) if fm is not None else None
            continue
        c = line[0]
        if c == "[":
            if cur is None:
                raise fail(TOOL, idx, raw, "port line before any Switch/Ca/Rt record")
            m = port_re_match(line)
            if m is None:
                raise fail(TOOL, idx, raw, f"malformed port line {shorten(raw)}")
            (lport, paren1, paren2, rletter, rguid_hex, rport, rpguid, comment) = m.groups()
            label: str | None = None
            local_pguid: str | None = None
            if cur.kind == "switch":
                if paren2 is not None:
                    raise fail(TOOL, idx, raw, "switch port line with a port GUID")
                label = paren1
            elif paren2 is not None:
                label, local_pguid = paren1, g(paren2)
            elif paren1 is not None and _HEX_RE.fullmatch(paren1):
                local_pguid = g(paren1)
            else:
                label = paren1
            local_lid: int | None = cur.lid
            if comment.startswith("lid "):
                lm = _LOCAL_LID_RE.match(comment)
                if lm is None:
                    raise fail(TOOL, idx, raw, f"malformed 'lid N lmc N' comment {shorten(raw)}")
                local_lid = int(lm.group(1))
                comment = comment[lm.end():]
            q2 = comment.rfind('"')
            if not comment.startswith('"') or q2 <= 0:
                raise fail(TOOL, idx, raw, f"expected quoted remote description {shorten(raw)}")
            tm = tail_match(comment, q2 + 1)
            if tm is None:
                raise fail(TOOL, idx, raw, f"expected 'lid N <width><speed>' {shorten(raw)}")
            rguid = g(rguid_hex)
            rkind = _KIND_BY_LETTER[rletter]
            if (rkind == "switch") == (rpguid is not None):
                raise fail(TOOL, idx, raw, "remote port GUID must be given for CA/router only")
            if rguid in nodes and nodes[rguid].kind != rkind:
                raise fail(TOOL, idx, raw, f"node {rguid} is a {nodes[rguid].kind}, not {rkind}")
            key_a = (cur.guid, int(lport))
            key_b = (rguid, int(rport))
            if not 1 <= key_a[1] <= cur.ports:
                raise fail(TOOL, idx, raw, f"port {lport} outside 1..{cur.ports} of this node")
            key = (*key_a, *key_b) if key_a <= key_b else (*key_b, *key_a)
            end = IbLinkEnd(
                guid=cur.guid, port=int(lport), name=cur.name, kind=cur.kind,
                port_guid=local_pguid, lid=local_lid, label=label,
            )
            seen = pending.get(key)
            if seen is None:
                pl = _Pending(a=end, b_kind=rkind, width=tm.group(2), speed=tm.group(3),
                              line_no=idx, line=raw)
                pending[key] = pl
                link_order.append(pl)
                if rguid not in nodes and rguid not in referenced:
                    referenced[rguid] = (idx, raw)
            elif seen.b is not None or (seen.a.guid, seen.a.port) == key_a:
                raise fail(TOOL, idx, raw, "link listed twice from the same end")
            elif seen.b_kind != cur.kind:
                raise fail(TOOL, idx, raw, f"node {cur.guid} is a {cur.kind}, but the other "
                           f"end of this link (line {seen.line_no}) calls it a {seen.b_kind}")
            else:
                seen.b = end
            continue
        if c in "SCR":
            m = node_re_match(line)
            if m is None:
                if _SKIP_RE.fullmatch(line):
                    continue
                raise fail(TOOL, idx, raw, f"malformed node record {shorten(raw)}")
            tag, nports, letter, guid_hex, desc, tail = m.groups()
            kind = _KIND_BY_TAG[tag]
            if _KIND_BY_LETTER[letter] != kind:
                raise fail(TOOL, idx, raw, f"{tag} record with a {letter}- node name")
            guid = g(guid_hex)
            if guid in nodes:
                raise fail(TOOL, idx, raw, f"duplicate record for node {guid}")
            lid = port0 = None
            if kind == "switch":
                sm = _SWITCH_TAIL_RE.fullmatch(tail)
                if sm is None:
                    raise fail(TOOL, idx, raw, f"expected '<enhanced|base> port 0 lid N lmc N' "
                               f"after the switch description, got {tail.strip()!r}")
                port0, lid = sm.group(1), int(sm.group(2))
            elif tail.strip() not in ("", "(scp)"):
                raise fail(TOOL, idx, raw, f"unexpected text after description: {tail!r}")
            own_key = {"switch": "switchguid", "ca": "caguid", "router": "rtguid"}[kind]
            if own_key in ids and ids[own_key][0] != guid:
                raise fail(TOOL, idx, raw, f"{own_key}={ids[own_key][0]} does not match {guid}")
            vend = ids.get("vendid")
            dev = ids.get("devid")
            sysimg = ids.get("sysimgguid")
            cur = IbNode(
                kind=kind, guid=guid, name=desc, ports=int(nports),
                vendid=int(vend[0], 16) if vend else None,
                devid=int(dev[0], 16) if dev else None,
                sysimgguid=sysimg[0] if sysimg else None,
                lid=lid, port0=port0, line_no=idx,
            )
            nodes[guid] = cur
            order.append(cur)
            ids = {}
            continue
        m = _ID_RE.fullmatch(line)
        if m is not None:
            key_name = m.group(1)
            if key_name in ids:
                raise fail(TOOL, idx, raw, f"{key_name}= repeated without a node record in between")
            value = m.group(2) if key_name in ("vendid", "devid") else g(m.group(2))
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
