"""Diff the discovered fabric (ibnetdiscover, optionally iblinkinfo) against the declared one."""

from __future__ import annotations

from ..model.expect import ExpectedLink, expected_links
from ..model.index import Index, PortKey
from ..model.place_text import cable_text, link_floor, port_text
from ..parse.iblinkinfo import IblinkinfoReport
from ..parse.ibnetdiscover import IbTopology
from .absent import PortState, absent_findings
from .devices import identity_findings, occupied_ports
from .findings import Finding, ids
from .identify import Binding, bind
from .miswire import Seen, miswired

_WIDTH_LANES = {"1x": 1, "2x": 2, "4x": 4, "8x": 8, "12x": 12}
_SPEED_ORDER = ["SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR"]

__all__ = ["Seen", "diff_fabric"]


def diff_fabric(index: Index, topo: IbTopology, linkinfo: IblinkinfoReport | None = None) -> list[Finding]:
    binding = bind(index, topo)
    occupied, plugged = occupied_ports(binding, topo)
    out = identity_findings(index, binding, topo, plugged)
    expected = expected_links(index)
    seen = _observed(binding, topo)
    at_port: dict[PortKey, Seen] = {}
    for s in seen:
        at_port[s.a] = s
        at_port[s.b] = s
    misplaced: list[Seen] = []
    matched: list[Seen] = []
    for s in seen:
        exp = expected.get(frozenset((s.a, s.b)))
        if exp is not None:
            matched.append(s)
            if s.width != exp.width or s.speed != exp.speed:
                out += _degraded(index, exp, s)
        elif index.cable_at.get(s.a) is None and index.cable_at.get(s.b) is None:
            out.append(_unexpected(index, s))
        else:
            misplaced.append(s)
    out += miswired(index, misplaced)
    missing = [
        exp
        for exp in expected.values()
        # an end cabled elsewhere is reported as miswired; one taken by an unknown device, with it
        if not (exp.a in at_port or exp.b in at_port or exp.a in occupied or exp.b in occupied)
    ]
    if missing:
        out += absent_findings(index, set(binding.by_guid.values()), missing, _down_ports(binding, topo, linkinfo))
    out += _rail_findings(index, matched)
    return out


def _observed(binding: Binding, topo: IbTopology) -> list[Seen]:
    """Links between bound devices (links to unknown devices are covered by FAB-UNKNOWN-DEVICE)."""
    seen: list[Seen] = []
    for link in topo.links:
        ka = binding.by_guid.get(link.a.guid)
        kb = binding.by_guid.get(link.b.guid)
        if ka is not None and kb is not None:
            seen.append(
                Seen(
                    (ka[0], ka[1], link.a.port),
                    (kb[0], kb[1], link.b.port),
                    link.width,
                    link.speed,
                    (link.a.lid, link.b.lid),
                )
            )
    return seen


def _degraded(index: Index, exp: ExpectedLink, s: Seen) -> list[Finding]:
    lanes = _WIDTH_LANES.get(s.width, 0)
    want_lanes = _WIDTH_LANES.get(exp.width, 0)
    narrow = lanes < want_lanes or s.width == "??"
    order = _SPEED_ORDER
    slow = s.speed == "???" or (
        s.speed in order and exp.speed in order and order.index(s.speed) < order.index(exp.speed)
    )
    if not narrow and not slow:
        return []
    subject = f"{port_text(exp.a)} - {port_text(exp.b)}"
    cable = cable_text(index, exp.cable)
    advice: list[str] = []
    if narrow:
        advice.append(
            f"reseat or replace {cable}: {s.width} of {exp.width} lanes came up, a damaged lane or a dirty "
            "connector; clean and reseat both ends, then swap the cable (or the optics)"
        )
    if slow:
        rated = "optic" if exp.cable.media in ("AOC", "fiber") else "cable"
        ends = [(k, lid) for k, lid in zip((s.a, s.b), s.lids, strict=True) if k[1] is None and lid]
        query = (
            f" (`ibportstate {ends[0][1]} {ends[0][0][2]} query` shows LinkSpeedEnabled of {port_text(ends[0][0])})"
            if ends
            else ""
        )
        advice.append(
            f"{'then ' if narrow else ''}check why {cable} trains at {s.speed} instead of {exp.speed}: the "
            f"{rated}'s rated speed (an {s.speed}-rated {rated} on an {exp.speed} port), the transceiver type at "
            f"each end, or a port forced to a lower speed{query}"
        )
    what = " and ".join(w for w, on in (("width", narrow), ("speed", slow)) if on)
    return [
        Finding(
            "FAB-DEGRADED",
            "error",
            subject,
            f"{subject} runs {s.width} {s.speed}, declared {exp.width} {exp.speed} (lower {what})",
            expected=f"{exp.width} {exp.speed}",
            observed=f"{s.width} {s.speed}",
            action="; ".join(advice),
            floor=link_floor(index, exp.a, exp.b, exp.cable),
            inventory=("cables", exp.index),
            covers=(port_text(exp.a), port_text(exp.b)),
            **ids(exp.a, exp.b, cable=exp.cable),
        )
    ]


def _unexpected(index: Index, s: Seen) -> Finding:
    subject = f"{port_text(s.a)} - {port_text(s.b)}"
    return Finding(
        "FAB-UNEXPECTED",
        "warning",
        subject,
        f"a link {subject} is up but no cable is declared on either port",
        observed=subject,
        action="declare the cable in the inventory if it is intended, otherwise remove it",
        floor=link_floor(index, s.a, s.b),
        **ids(s.a, s.b),
    )


def _down_ports(binding: Binding, topo: IbTopology, linkinfo: IblinkinfoReport | None) -> dict[PortKey, PortState]:
    """Declared ports that iblinkinfo shows not Active/LinkUp, with the owning device's LID (from
    iblinkinfo, else ibnetdiscover's switch record) for `ibportstate`."""
    out: dict[PortKey, PortState] = {}
    if linkinfo is None:
        return out
    switch_lid = {n.guid: n.lid for n in topo.switches}
    for node in linkinfo.nodes:
        key = binding.by_guid.get(node.guid or "")
        if key is None:
            continue
        for port in node.ports:
            if port.state != "Active" or port.physical_state != "LinkUp":
                lid = port.lid or switch_lid.get(node.guid or "")
                out[(key[0], key[1], port.port)] = PortState(
                    f"{port.state}/{port.physical_state}", port.physical_state, lid or None
                )
    return out


def _rail_findings(index: Index, matched: list[Seen]) -> list[Finding]:
    """Declared links, seen as declared, that put an HCA on another rail's leaf (a misplaced cable is
    FAB-MISWIRED instead, which says where it belongs)."""
    out: list[Finding] = []
    for s in matched:
        if s.a[1] is None and s.b[1] is None:
            continue
        for x, y in ((s.a, s.b), (s.b, s.a)):
            if x[1] is None or y[1] is not None:
                continue
            hca = index.hca(x[0], x[1])
            sw = index.switches.get(y[0])
            if hca is None or sw is None or hca.rail is None or sw.rail is None or sw.role != "leaf":
                continue
            if hca.rail != sw.rail:
                out.append(
                    Finding(
                        "FAB-RAIL",
                        "error",
                        port_text(x),
                        f"{port_text(x)} (rail {hca.rail}) is cabled to {y[0]}, a rail-{sw.rail} leaf",
                        expected=f"a rail-{hca.rail} leaf",
                        observed=f"{y[0]} (rail {sw.rail})",
                        action="move the cable to the node's rail leaf; rail-optimized NCCL traffic "
                        "would otherwise cross the spine",
                        floor=link_floor(index, x, y, index.cable_at.get(x)),
                        **ids(x, y, cable=index.cable_at.get(x)),
                    )
                )
    return out
