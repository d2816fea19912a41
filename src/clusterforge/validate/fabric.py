"""Diff the discovered fabric (ibnetdiscover, optionally iblinkinfo) against the declared one."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.cabling import Cable
from ..model.index import Index, PortKey
from ..parse.iblinkinfo import IblinkinfoReport
from ..parse.ibnetdiscover import IbTopology
from .expect import ExpectedLink, cable_text, device_floor, expected_links, floor_of, port_text
from .findings import Finding
from .identify import Binding, bind

_WIDTH_LANES = {"1x": 1, "2x": 2, "4x": 4, "8x": 8, "12x": 12}
_SPEED_ORDER = ["SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR"]


@dataclass(frozen=True, slots=True)
class Seen:
    a: PortKey
    b: PortKey
    width: str
    speed: str


def diff_fabric(index: Index, topo: IbTopology, linkinfo: IblinkinfoReport | None = None) -> list[Finding]:
    binding = bind(index, topo)
    out = _identity_findings(index, binding)
    expected = expected_links(index)
    seen = _observed(binding, topo)
    at_port: dict[PortKey, Seen] = {}
    for s in seen:
        at_port[s.a] = s
        at_port[s.b] = s
    misplaced: list[Seen] = []
    for s in seen:
        exp = expected.get(frozenset((s.a, s.b)))
        if exp is not None:
            out += _degraded(index, exp, s)
        elif index.cable_at.get(s.a) is None and index.cable_at.get(s.b) is None:
            out.append(_unexpected(index, s))
        else:
            misplaced.append(s)
    out += _miswired(index, misplaced)
    down = _down_ports(binding, linkinfo)
    for exp in expected.values():
        if exp.a in at_port or exp.b in at_port:
            continue  # at least one end is cabled somewhere: reported as miswired
        out.append(_missing(index, exp, down))
    out += _rail_findings(index, seen, expected)
    return out


def _observed(binding: Binding, topo: IbTopology) -> list[Seen]:
    """Links between bound devices (links to unknown devices are covered by FAB-UNKNOWN-DEVICE)."""
    seen: list[Seen] = []
    for link in topo.links:
        ka = binding.by_guid.get(link.a.guid)
        kb = binding.by_guid.get(link.b.guid)
        if ka is not None and kb is not None:
            seen.append(
                Seen((ka[0], ka[1], link.a.port), (kb[0], kb[1], link.b.port), link.width, link.speed)
            )
    return seen


def _identity_findings(index: Index, binding: Binding) -> list[Finding]:
    out: list[Finding] = []
    for node, key, locked in binding.guid_mismatch:
        name = f"{key[0]} {key[1]}" if key[1] else key[0]
        out.append(
            Finding(
                "FAB-GUID-MISMATCH",
                "error",
                name,
                f"{name} answers with GUID {node.guid}, the locked GUID is {locked}: the hardware was replaced",
                expected=locked,
                observed=node.guid,
                action=(
                    f"confirm the replacement of {name} ({device_floor(index, key[0])}), then run "
                    "`clusterforge learn` to lock the new GUID and re-render the OpenSM GUID files"
                ),
                floor=device_floor(index, key[0]),
            )
        )
    for node in binding.unknown:
        out.append(
            Finding(
                "FAB-UNKNOWN-DEVICE",
                "warning",
                f"{node.kind} {node.guid}",
                f"{node.kind} {node.guid} {node.name!r} matches no declared device",
                observed=node.name,
                action="declare it in the inventory, or find and remove it; check its node description",
            )
        )
    for desc, nodes in binding.duplicate_desc:
        out.append(
            Finding(
                "FAB-DUP-DESC",
                "warning",
                desc,
                f"{len(nodes)} devices share the node description {desc!r}: "
                f"{', '.join(n.guid for n in nodes)}",
                action="give each device a unique node description (OpenSM node-name-map or the host's "
                "/sys/class/infiniband/*/node_desc)",
            )
        )
    return out


def _degraded(index: Index, exp: ExpectedLink, s: Seen) -> list[Finding]:
    lanes = _WIDTH_LANES.get(s.width, 0)
    want_lanes = _WIDTH_LANES.get(exp.width, 0)
    slow = s.speed in _SPEED_ORDER and _SPEED_ORDER.index(s.speed) < _SPEED_ORDER.index(exp.speed)
    if lanes >= want_lanes and not slow and s.speed != "???" and s.width != "??":
        return []
    subject = f"{port_text(exp.a)} - {port_text(exp.b)}"
    return [
        Finding(
            "FAB-DEGRADED",
            "error",
            subject,
            f"{subject} runs {s.width} {s.speed}, declared {exp.width} {exp.speed}",
            expected=f"{exp.width} {exp.speed}",
            observed=f"{s.width} {s.speed}",
            action=(
                f"reseat or replace {cable_text(index, exp.cable)}; a lower width usually means a "
                "damaged lane or a dirty connector. Check both ends' transceivers"
            ),
            floor=f"{floor_of(index, exp.a)} to {floor_of(index, exp.b)}",
            inventory=("cables", exp.index),
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
        floor=f"{floor_of(index, s.a)} to {floor_of(index, s.b)}",
    )


def _miswired(index: Index, misplaced: list[Seen]) -> list[Finding]:
    """Pair misplaced links into swaps, else report each alone. A swap partner of a link seen at port
    x is the link seen at the declared peer of x: looked up, not searched (linear in links)."""
    out: list[Finding] = []
    done: set[int] = set()
    seen_at = {end: j for j, s in enumerate(misplaced) for end in (s.a, s.b)}
    position = {id(c): k for k, c in enumerate(index.inv.cables)} if misplaced else {}
    for i, s1 in enumerate(misplaced):
        if i in done:
            continue
        for x in (s1.a, s1.b):
            cable = index.cable_at.get(x)
            j = seen_at.get(_other_end(cable, x)) if cable is not None else None
            if j is None or j == i or j in done:
                continue
            swap = _as_swap(index, position, s1, misplaced[j])
            if swap is not None:
                out.append(swap)
                done.update((i, j))
                break
    for i, s in enumerate(misplaced):
        if i not in done:
            out.append(_one_miswire(index, position, s))
    return out


def _other_end(cable: Cable, key: PortKey) -> PortKey:
    return cable.b.key if cable.a.key == key else cable.a.key


def _as_swap(index: Index, position: dict[int, int], s1: Seen, s2: Seen) -> Finding | None:
    """Two seen links that are two declared cables with one pair of ends exchanged."""

    # prefer naming the hosts (x) and the switch ports they landed on (y)
    def ends(s: Seen) -> list[tuple[PortKey, PortKey]]:
        return sorted(((s.a, s.b), (s.b, s.a)), key=lambda xy: xy[1][1] is not None)

    for x1, y1 in ends(s1):
        for x2, y2 in ends(s2):
            c1 = index.cable_at.get(x1)
            c2 = index.cable_at.get(x2)
            if c1 is None or c2 is None or c1.id == c2.id:
                continue
            # declared x1-y2 and x2-y1, seen x1-y1 and x2-y2: the y ends are swapped
            if {c1.a.key, c1.b.key} == {x1, y2} and {c2.a.key, c2.b.key} == {x2, y1}:
                where = _swap_place(y1, y2)
                return Finding(
                    "FAB-MISWIRED",
                    "error",
                    f"{port_text(x1)} / {port_text(x2)}",
                    f"{x1[0]} and {x2[0]} are swapped on {where}: {port_text(x1)} reaches "
                    f"{port_text(y1)} (declared {port_text(y2)}), {port_text(x2)} reaches "
                    f"{port_text(y2)} (declared {port_text(y1)})",
                    expected=f"{port_text(x1)} - {port_text(y2)}, {port_text(x2)} - {port_text(y1)}",
                    observed=f"{port_text(x1)} - {port_text(y1)}, {port_text(x2)} - {port_text(y2)}",
                    action=(
                        f"swap cables {c1.id} and {c2.id} at {where}" + _trunk_hint(index, c1.trunk, c2.trunk)
                    ),
                    floor=floor_of(index, y1),
                    inventory=("cables", position[id(c1)]),
                )
    return None


def _swap_place(y1: PortKey, y2: PortKey) -> str:
    if y1[0] == y2[0] and y1[1] is None:
        return f"{y1[0]} ports {y1[2]}/{y2[2]}"
    return f"{port_text(y1)} and {port_text(y2)}"


def _trunk_hint(index: Index, *trunks: str | None) -> str:
    ids = sorted({t for t in trunks if t})
    if not ids:
        return ""
    parts = []
    for tid in ids:
        trunk = index.trunks.get(tid)
        if trunk is not None:
            parts.append(f"trunk {tid} (patch panels {trunk.a_panel} / {trunk.b_panel})")
    return "; the links ride " + ", ".join(parts) if parts else ""


def _one_miswire(index: Index, position: dict[int, int], s: Seen) -> Finding:
    # Report from the end that has a declared cable, preferring the host end.
    for x, y in ((s.a, s.b), (s.b, s.a)):
        cable = index.cable_at.get(x)
        if cable is None:
            continue
        want = _other_end(cable, x)
        return Finding(
            "FAB-MISWIRED",
            "error",
            port_text(x),
            f"{port_text(x)} reaches {port_text(y)}, declared {port_text(want)} ({cable.id})"
            + _rail_note(index, x, y),
            expected=port_text(want),
            observed=port_text(y),
            action=(
                f"move {cable_text(index, cable)} from {port_text(y)} to {port_text(want)}"
                + _trunk_hint(index, cable.trunk)
            ),
            floor=floor_of(index, y),
            inventory=("cables", position[id(cable)]),
        )
    raise AssertionError("misplaced link without a declared end")  # guarded by the caller


def _down_ports(binding: Binding, linkinfo: IblinkinfoReport | None) -> dict[PortKey, str]:
    """Declared switch ports that iblinkinfo shows Down/Polling: (device, None, port) -> state."""
    out: dict[PortKey, str] = {}
    if linkinfo is None:
        return out
    for node in linkinfo.nodes:
        key = binding.by_guid.get(node.guid or "")
        if key is None:
            continue
        for port in node.ports:
            if port.state != "Active" or port.physical_state != "LinkUp":
                out[(key[0], key[1], port.port)] = f"{port.state}/{port.physical_state}"
    return out


def _missing(index: Index, exp: ExpectedLink, down: dict[PortKey, str]) -> Finding:
    subject = f"{port_text(exp.a)} - {port_text(exp.b)}"
    state = down.get(exp.a) or down.get(exp.b)
    if state is not None:
        return Finding(
            "FAB-PORT-DOWN",
            "error",
            subject,
            f"{subject}: port is {state}",
            expected="Active/LinkUp",
            observed=state,
            action=(
                f"check {cable_text(index, exp.cable)}: Polling means no peer answers (cable "
                "unplugged or the far end down); Disabled means the port was shut: `ibportstate "
                "<lid> <port> enable`"
            ),
            floor=f"{floor_of(index, exp.a)} to {floor_of(index, exp.b)}",
            inventory=("cables", exp.index),
        )
    return Finding(
        "FAB-MISSING",
        "error",
        subject,
        f"{subject} is not seen on the fabric",
        expected=f"{exp.width} {exp.speed} link",
        observed="no link",
        action=(
            f"check {cable_text(index, exp.cable)}: plugged at both ends, "
            f"{floor_of(index, exp.a)} and {floor_of(index, exp.b)}; is the host powered?"
            + _trunk_hint(index, exp.cable.trunk)
        ),
        floor=f"{floor_of(index, exp.a)} to {floor_of(index, exp.b)}",
        inventory=("cables", exp.index),
    )


def _rail_findings(
    index: Index, seen: list[Seen], expected: dict[frozenset[PortKey], ExpectedLink]
) -> list[Finding]:
    out: list[Finding] = []
    for s in seen:
        if frozenset((s.a, s.b)) not in expected:
            continue  # a misplaced cable: FAB-MISWIRED says where it belongs
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
                        floor=floor_of(index, y),
                    )
                )
    return out


def _rail_note(index: Index, x: PortKey, y: PortKey) -> str:
    host, sw = (x, y) if x[1] is not None else (y, x)
    hca = index.hca(host[0], host[1] or "") if host[1] else None
    leaf = index.switches.get(sw[0])
    if hca is None or leaf is None or hca.rail is None or leaf.rail is None or hca.rail == leaf.rail:
        return ""
    return f"; this crosses rails (rail-{hca.rail} HCA on a rail-{leaf.rail} leaf)"
