"""What changed between two versions of an inventory, device by device and cable by cable. Pure.

Devices (racks, nodes, switches, patch panels, trunks) are matched by name (id), cables
by id, then the cables left over on either side by their two ends: a cable whose id
changed but which joins the same two ports is the same cable, relabelled, not one
unplugged and another plugged in.

* device: `added`, `removed`, `moved` (rack or U changed: it is taken out and put back),
  `changed` (anything else: the fields that differ are named; for nodes the effective
  hardware, profile included, is compared, so a profile edit shows on every node using it,
  and so are the allocated addresses: `address ib0 198.18.128.18 -> 198.18.128.19`. Addresses
  are frozen in addresses.generated.yaml, so inserting or removing nodes moves no one else's:
  only an asked-for renumbering (`plan --renumber --write`, a declared address) shows here).
* cable: `added`, `removed`, `moved` (same id, other ends: the ends that change are named),
  `replaced` (same ends, other medium, length or fiber: a new cable goes in),
  `rerouted` (same ends and cable, other trunk or lane group: patched differently),
  `relabelled` (same ends, only the id or label differs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..model.addresses import Addresses
from ..model.cabling import Cable
from ..model.index import Index, PortKey

DeviceKind = Literal["rack", "node", "switch", "patch_panel", "trunk"]
DeviceChangeKind = Literal["added", "removed", "moved", "changed"]
CableChangeKind = Literal["added", "removed", "moved", "replaced", "rerouted", "relabelled"]

_PHYSICAL = ("media", "length_m", "fiber_type")
_ROUTING = ("trunk", "lane_group")
_HARDWARE = ("gpus", "hcas", "dpus", "u_height", "profile")
LEARN_FIELDS = ("hcas", "dpus", "profile", "hardware.hcas", "hardware.dpus")  # a node's GUIDs change with these


@dataclass(frozen=True, slots=True)
class DeviceChange:
    kind: DeviceKind
    name: str
    change: DeviceChangeKind
    old_place: tuple[str, int] | None  # (rack, U); racks and trunks: (row or panels, position or 0)
    new_place: tuple[str, int] | None
    fields: tuple[str, ...] = ()  # what differs, for `changed` (and `moved` when more than the place)


@dataclass(frozen=True, slots=True)
class CableChange:
    change: CableChangeKind
    id: str  # the new id (the old one for `removed`)
    old: Cable | None
    new: Cable | None
    fields: tuple[str, ...] = ()

    @property
    def cable(self) -> Cable:
        """The cable as it will be (as it was, for `removed`)."""
        c = self.new or self.old
        assert c is not None
        return c


@dataclass(frozen=True)
class InventoryDiff:
    devices: tuple[DeviceChange, ...]
    cables: tuple[CableChange, ...]

    @property
    def empty(self) -> bool:
        return not self.devices and not self.cables


def diff_inventories(old: Index, new: Index) -> InventoryDiff:
    devices: list[DeviceChange] = []
    devices += _diff_named("rack", {r.name: r for r in old.inv.racks}, {r.name: r for r in new.inv.racks},
                           lambda r: (r.row, r.position))
    devices += _diff_named("node", old.nodes, new.nodes, lambda n: (n.rack, n.u))
    devices += _diff_nodes_hardware(old, new)
    devices += _diff_addresses(old, new)
    devices += _diff_named("switch", old.switches, new.switches, lambda s: (s.rack, s.u))
    devices += _diff_switch_guids(old, new)
    devices += _diff_named("patch_panel", {p.name: p for p in old.inv.patch_panels},
                           {p.name: p for p in new.inv.patch_panels}, lambda p: (p.rack, p.u))
    devices += _diff_named("trunk", old.trunks, new.trunks, lambda t: (f"{t.a_panel} - {t.b_panel}", 0))
    return InventoryDiff(tuple(_merge_node_changes(devices)), tuple(diff_cables(old.inv.cables, new.inv.cables)))


def unit_heights(index: Index) -> dict[str, int]:
    """Rack units each device takes from its U up, as check/placement.py counts them: a node its
    hardware's `u_height`, a switch its catalog model's `ru` (1 when unknown), a patch panel 1."""
    out = {n.name: index.hardware[n.name].u_height for n in index.inv.nodes}
    switches = index.cat.switches
    for sw in index.inv.switches:
        model = switches.get(sw.model)
        out[sw.name] = model.ru if model else 1
    out.update({p.name: 1 for p in index.inv.patch_panels})
    return out


def hardware_fields(fields: tuple[str, ...]) -> list[str]:
    """The fields of a node's change that are its hardware (declared, or its profile's `hardware.*`)."""
    return [f for f in fields if f.split(".")[0] in _HARDWARE or f.startswith("hardware.")]


def device_places(index: Index) -> dict[str, tuple[str, int]]:
    """(rack, lowest U) of every node, switch and patch panel, by name (`Index.places` without the panels)."""
    out = dict(index.places)
    out.update({p.name: (p.rack, p.u) for p in index.inv.patch_panels})
    return out


def _dump(model: Any) -> dict[str, Any]:
    out: dict[str, Any] = model.model_dump(mode="json")
    return out


def _diff_named(kind: DeviceKind, old: dict[str, Any], new: dict[str, Any], place: Any) -> list[DeviceChange]:
    out: list[DeviceChange] = []
    for name in sorted(old.keys() - new.keys()):
        out.append(DeviceChange(kind, name, "removed", place(old[name]), None))
    for name in sorted(new.keys() - old.keys()):
        out.append(DeviceChange(kind, name, "added", None, place(new[name])))
    for name in sorted(old.keys() & new.keys()):
        a, b = old[name], new[name]
        if a == b:
            continue
        pa, pb = place(a), place(b)
        fields = _changed_fields(_dump(a), _dump(b))
        rest = tuple(f for f in fields if f not in _PLACE_FIELDS[kind])
        out.append(DeviceChange(kind, name, "moved" if pa != pb else "changed", pa, pb, rest))
    return out


_PLACE_FIELDS: dict[str, tuple[str, ...]] = {
    "rack": ("row", "position"), "node": ("rack", "u"), "switch": ("rack", "u"), "patch_panel": ("rack", "u"),
    "trunk": ("a_panel", "b_panel"),
}


def _diff_nodes_hardware(old: Index, new: Index) -> list[DeviceChange]:
    """Nodes declared the same whose effective hardware differs (their profile was edited)."""
    out: list[DeviceChange] = []
    for name in sorted(old.nodes.keys() & new.nodes.keys()):
        ha, hb = old.hardware.get(name), new.hardware.get(name)
        if ha is None or hb is None or ha == hb:
            continue
        fields = tuple(f"hardware.{f}" for f in _changed_fields(_dump(ha), _dump(hb)))
        if fields:
            node = new.nodes[name]
            out.append(DeviceChange("node", name, "changed", (node.rack, node.u), (node.rack, node.u), fields))
    return out


def _diff_switch_guids(old: Index, new: Index) -> list[DeviceChange]:
    """Switches whose GUID as locked (`guid_locks.switches`, guids.generated.yaml) changed or was dropped:
    the unit was swapped (a failed switch replaced by the same model has a new GUID, learned again)."""
    a, b = old.inv.guid_locks.switches, new.inv.guid_locks.switches
    out: list[DeviceChange] = []
    for name in sorted(old.switches.keys() & new.switches.keys()):
        known = a.get(name)  # a lock first written (learned) is no swap
        if known is not None and known != b.get(name) and old.switches[name].guid == new.switches[name].guid:
            sw = new.switches[name]
            out.append(DeviceChange("switch", name, "changed", (sw.rack, sw.u), (sw.rack, sw.u), ("guid",)))
    return out


def _diff_addresses(old: Index, new: Index) -> list[DeviceChange]:
    """Nodes in both whose allocated management, BMC or IPoIB address differs."""
    a, b = old.addresses, new.addresses
    ifaces_of: dict[str, set[str]] = {}
    for host, ifname in [*a.ipoib, *b.ipoib]:
        ifaces_of.setdefault(host, set()).add(ifname)
    out: list[DeviceChange] = []
    for name in sorted(old.nodes.keys() & new.nodes.keys()):
        fields = []
        for label, xa, xb in (("mgmt", a.mgmt.get(name), b.mgmt.get(name)), ("bmc", a.bmc.get(name), b.bmc.get(name))):
            if xa != xb:
                fields.append(f"address {label} {_ip(a, xa)} -> {_ip(b, xb)}")
        for ifname in sorted(ifaces_of.get(name, ())):
            xa, xb = a.ipoib.get((name, ifname)), b.ipoib.get((name, ifname))
            if xa != xb:
                fields.append(f"address {ifname} {_ip(a, xa)} -> {_ip(b, xb)}")
        if fields:
            node = new.nodes[name]
            out.append(DeviceChange("node", name, "changed", (node.rack, node.u), (node.rack, node.u), tuple(fields)))
    return out


def _ip(addrs: Addresses, value: int | None) -> str:
    return "none" if value is None else addrs.text(value)


def _merge_node_changes(changes: list[DeviceChange]) -> list[DeviceChange]:
    """One change per device: a node's declared-field and hardware changes together."""
    merged: dict[tuple[str, str], DeviceChange] = {}
    for c in changes:
        key = (c.kind, c.name)
        first = merged.get(key)
        if first is None:
            merged[key] = c
        else:
            fields = tuple(dict.fromkeys(first.fields + c.fields))
            merged[key] = DeviceChange(c.kind, c.name, first.change, first.old_place, first.new_place, fields)
    return list(merged.values())


def _changed_fields(a: dict[str, Any], b: dict[str, Any]) -> tuple[str, ...]:
    """Top-level keys whose values differ, in the model's field order."""
    keys = list(dict.fromkeys([*a, *b]))
    return tuple(k for k in keys if a.get(k) != b.get(k))


def cable_ends(c: Cable) -> frozenset[PortKey]:
    """A cable's two ports, whichever way round it is written."""
    return frozenset((c.a.key, c.b.key))


def diff_cables(old: list[Cable], new: list[Cable]) -> list[CableChange]:
    """Cable changes in the new inventory's cable order (removed ones last, in the old order)."""
    old_by_id = {c.id: c for c in old}
    new_by_id = {c.id: c for c in new}
    gone = [c for c in old if c.id not in new_by_id]
    gone_by_ends: dict[frozenset[PortKey], Cable] = {}
    for c in gone:
        gone_by_ends.setdefault(cable_ends(c), c)
    out: list[CableChange] = []
    matched: set[str] = set()
    for c in new:
        before = old_by_id.get(c.id)
        if before is None:
            twin = gone_by_ends.get(cable_ends(c))
            if twin is not None and twin.id not in matched:
                matched.add(twin.id)
                out.append(_same_ends(twin, c, ("id",)))
            else:
                out.append(CableChange("added", c.id, None, c))
            continue
        if _same(before, c):
            continue
        if cable_ends(before) != cable_ends(c):
            moved = tuple(side for side in ("a", "b") if getattr(before, side) != getattr(c, side))
            out.append(CableChange("moved", c.id, before, c, moved))
        else:
            change = _same_ends(before, c, ())
            if change.fields:  # not just `generated` or the ends written the other way round
                out.append(change)
    out += [CableChange("removed", c.id, c, None) for c in gone if c.id not in matched]
    return out


def _same(x: Cable, y: Cable) -> bool:
    """x == y, without pydantic's field-by-field __eq__ of the nested port references (50,000 cables)."""
    return (x.a.device == y.a.device and x.a.hca == y.a.hca and x.a.port == y.a.port and x.b.device == y.b.device
            and x.b.hca == y.b.hca and x.b.port == y.b.port and x.media == y.media and x.length_m == y.length_m
            and x.label == y.label and x.fiber_type == y.fiber_type and x.trunk == y.trunk
            and x.lane_group == y.lane_group and x.generated == y.generated and x.id == y.id)


def _same_ends(before: Cable, after: Cable, extra: tuple[str, ...]) -> CableChange:
    fields = extra + tuple(f for f in ("label", *_PHYSICAL, *_ROUTING) if getattr(before, f) != getattr(after, f))
    if any(f in _PHYSICAL for f in fields):
        kind: CableChangeKind = "replaced"
    elif any(f in _ROUTING for f in fields):
        kind = "rerouted"
    else:
        kind = "relabelled"
    return CableChange(kind, after.id, before, after, fields)
