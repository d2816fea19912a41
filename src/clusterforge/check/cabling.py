"""Cables: both ends exist and are free, rates match, length within the media's reach."""

from __future__ import annotations

from collections.abc import Mapping

from ..model.cabling import Cable
from ..model.index import Index, PortInfo
from ..util.errors import InventoryIssue


def check(index: Index) -> list[InventoryIssue]:
    inv, cat = index.inv, index.cat
    out: list[InventoryIssue] = []
    first_at = index.cable_at  # port -> the first cable declared in it
    trunks = index.trunks
    lanes: dict[tuple[str, int], str] = {}
    fibers_per_link = cat.media["fiber"].fibers_per_link or {}
    reach_cache: dict[tuple[str, str, str | None], float | None] = {}
    for i, cable in enumerate(inv.cables):
        ends: list[PortInfo] = []
        for side, ref in (("a", cable.a), ("b", cable.b)):
            info, problem = _resolve(index, ref.device, ref.hca, ref.port)
            if info is None:
                out.append(InventoryIssue(("cables", i, side), problem or "unknown port", rule="INV-REF"))
                continue
            other = first_at[ref.key]
            if other is not cable:
                out.append(
                    InventoryIssue(("cables", i, side), f"port {ref} is already used by cable {other.id}",
                        rule="INV-CABLE")
                )
            ends.append(info)
        if cable.a.key == cable.b.key:
            out.append(InventoryIssue(("cables", i, "b"), "a cable cannot loop back to its own port", rule="INV-CABLE"))
        if len(ends) == 2:
            out += _link(index, i, cable, ends[0], ends[1], reach_cache)
        if cable.trunk is not None or cable.fiber_type is not None or cable.lane_group is not None:
            out += _fiber(fibers_per_link, i, cable, trunks, lanes, ends)
    return out


def _resolve(index: Index, device: str, hca: str | None, port: int) -> tuple[PortInfo | None, str | None]:
    info = index.port(device, hca, port)
    if info is not None:
        return info, None
    if device in index.switches:
        if hca is not None:
            return None, f"{device} is a switch: write {device}/{port}"
        count = index.switch_port_count(index.switches[device])
        if count is None:
            return None, f"{device} has an unknown switch model"
        return None, f"{device} has {count} ports; port {port} is beyond its radix"
    if device in index.nodes:
        if hca is None:
            return None, f"{device} is a node: write {device}/<hca>/{port}"
        hw = index.hardware[device]
        names = [h.name for h in hw.hcas] + [d.name for d in hw.dpus]
        if hca not in names:
            return None, f"node {device} has no HCA {hca} (it has {', '.join(names) or 'none'})"
        return None, f"{device} {hca} has no port {port}"
    return None, f"no device named {device!r}"


def _link(
    index: Index,
    i: int,
    cable: Cable,
    a: PortInfo,
    b: PortInfo,
    reach_cache: dict[tuple[str, str, str | None], float | None],
) -> list[InventoryIssue]:
    cat = index.cat
    out: list[InventoryIssue] = []
    if a.kind != "switch" and b.kind != "switch" and a.device == b.device:
        out.append(InventoryIssue(("cables", i), f"{a} and {b} are on the same node", rule="INV-CABLE"))
    if a.rate is None or b.rate is None:
        return out
    if not cat.links_up(a.rate, b.rate):
        out.append(
            InventoryIssue(
                ("cables", i),
                f"{a} runs {a.rate} and {b} runs {b.rate}: the ends cannot link up",
                rule="INV-CABLE",
            )
        )
        return out
    rate = cat.slower(a.rate, b.rate) or a.rate  # both known here
    fiber_type = cable.fiber_type
    if fiber_type is None and cable.trunk is not None:
        trunk = index.trunks.get(cable.trunk)
        fiber_type = trunk.fiber_type if trunk else None
    rkey = (cable.media, rate, fiber_type)
    if rkey not in reach_cache:
        reach_cache[rkey] = cat.reach(cable.media, rate, fiber_type)
    reach = reach_cache[rkey]
    if reach is None:
        out.append(InventoryIssue(("cables", i, "media"), f"{cable.media} does not carry {rate}", rule="INV-REACH"))
    elif cable.length_m > reach:
        kind = f"{cable.media} ({fiber_type or 'OM4'})" if cable.media == "fiber" else cable.media
        out.append(
            InventoryIssue(
                ("cables", i, "length_m"),
                f"{cable.length_m:g} m exceeds the {reach:g} m reach of {kind} at {rate}",
                rule="INV-REACH",
            )
        )
    return out


def _fiber(
    fibers_per_link: dict[str, int],
    i: int,
    cable: Cable,
    trunks: Mapping[str, object],
    lanes: dict[tuple[str, int], str],
    ends: list[PortInfo],
) -> list[InventoryIssue]:
    out: list[InventoryIssue] = []
    if cable.fiber_type is not None and cable.media != "fiber":
        out.append(InventoryIssue(("cables", i, "fiber_type"), f"fiber_type set on {cable.media} cable",
            rule="INV-TRUNK"))
    if cable.trunk is None:
        if cable.lane_group is not None:
            out.append(InventoryIssue(("cables", i, "lane_group"), "lane_group without a trunk", rule="INV-TRUNK"))
        return out
    if cable.media != "fiber":
        out.append(
            InventoryIssue(("cables", i, "trunk"), f"{cable.media} cable cannot ride MPO trunk {cable.trunk}",
                rule="INV-TRUNK")
        )
    if cable.trunk not in trunks:
        out.append(InventoryIssue(("cables", i, "trunk"), f"no trunk named {cable.trunk!r}", rule="INV-REF"))
        return out
    if cable.lane_group is None:
        out.append(InventoryIssue(("cables", i, "lane_group"), f"rides {cable.trunk} without a lane_group",
            rule="INV-TRUNK"))
        return out
    rate = next((e.rate for e in ends if e.rate), "HDR")
    per = fibers_per_link.get(rate, 8)
    groups = 24 // per
    if cable.lane_group >= groups:
        out.append(
            InventoryIssue(
                ("cables", i, "lane_group"),
                f"lane group {cable.lane_group} beyond the {groups} groups "
                f"of {per} fibers in a 24-fiber trunk",
                rule="INV-TRUNK",
            )
        )
    other = lanes.setdefault((cable.trunk, cable.lane_group), cable.id)
    if other != cable.id:
        out.append(
            InventoryIssue(
                ("cables", i, "lane_group"),
                f"lane group {cable.lane_group} of {cable.trunk} is already used by cable {other}",
                rule="INV-TRUNK",
            )
        )
    return out
