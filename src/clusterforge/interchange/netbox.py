"""NetBox interchange: an environment as NetBox bulk-import CSVs, and such CSVs back into one.

Columns are those of NetBox 4.2's CSV import forms (`netbox/dcim/forms/bulk_import.py`:
SiteImportForm, LocationImportForm, RackImportForm, ManufacturerImportForm, DeviceRoleImportForm,
DeviceTypeImportForm, DeviceImportForm, InterfaceImportForm, PowerPortImportForm,
InventoryItemRoleImportForm, InventoryItemImportForm, RearPortImportForm, FrontPortImportForm,
CableImportForm), with the choice values of `dcim/choices.py` (InterfaceTypeChoices
`infiniband-hdr`..., CableTypeChoices `dac-passive`, `aoc`, `mmf-om4`..., PortTypeChoices `mpo`).
Files are written in the order NetBox must import them (FILES).

Mapping (docs/interchange.md has the whole table):

* rows are Locations of the site; racks, devices (nodes, switches, patch panels) sit in them;
* a node's profile is its device type; HCAs, DPUs, GPUs and disks are inventory items (the catalog
  model as part_id), each HCA/DPU port an interface `<hca>/<port>` with the rate as type and speed and
  the port GUID as WWN (an EUI-64); a switch has one interface per (logical) port, named by number;
* a patch panel has one MPO rear port per trunk end and, for each lane group, a front port at that
  position; a trunk is a cable between two rear ports; a link that rides a trunk is two patch
  cords (device interface <-> front port at its lane group) labelled with the link's id;
* what NetBox has no field for is kept as `key=value` words in the description (rack position
  and cooling, HCA rail/GPU/NUMA, trunk polarity); what it cannot hold at all (addressing,
  services, software pins, the fabric spec, monitoring) is not exported.

Both directions are pure: tables in, tables out; the export is here, the import in `netbox_import.py`.
`cli/export.py` and `cli/import_.py` do the I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..model.index import Index
from ..util.csvtext import csv_text
from ..util.numtext import num_text

NETBOX_VERSION = "4.2"
MANUFACTURER = "NVIDIA"
MPO_FIBERS = 24

FILES: dict[str, tuple[str, ...]] = {
    "manufacturers.csv": ("name", "slug"),
    "sites.csv": ("name", "slug", "status", "physical_address"),
    "locations.csv": ("site", "name", "slug", "status", "description"),
    "racks.csv": ("site", "location", "name", "status", "width", "u_height", "outer_width", "outer_unit",
                  "description"),
    "device-roles.csv": ("name", "slug", "color"),
    "device-types.csv": ("manufacturer", "model", "slug", "u_height"),
    "devices.csv": ("name", "role", "manufacturer", "device_type", "status", "site", "location", "rack", "position",
                    "face", "description"),
    "interfaces.csv": ("device", "name", "type", "speed", "mgmt_only", "wwn", "description"),
    "power-ports.csv": ("device", "name", "allocated_draw"),
    "inventory-item-roles.csv": ("name", "slug", "color"),
    "inventory-items.csv": ("device", "name", "status", "role", "manufacturer", "part_id", "description"),
    "rear-ports.csv": ("device", "name", "type", "positions"),
    "front-ports.csv": ("device", "name", "type", "rear_port", "rear_port_position"),
    "cables.csv": ("side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name",
                   "type", "status", "label", "length", "length_unit", "description"),
}
"""Each file NetBox imports, in import order, with its columns."""

SWITCH_ROLES = {"leaf": "ib-leaf", "spine": "ib-spine", "core": "ib-core"}
PANEL_ROLE = "patch-panel"
ROLE_COLORS = {"ib-leaf": "4caf50", "ib-spine": "2196f3", "ib-core": "9c27b0", PANEL_ROLE: "9e9e9e"}
ITEM_ROLES = {"gpu": "76b900", "hca": "ff9800", "dpu": "795548", "disk": "607d8b"}

RATE_TYPE: dict[str, tuple[str, int]] = {  # rate -> (NetBox interface type, speed in kbit/s)
    "EDR": ("infiniband-edr", 100_000_000),
    "HDR100": ("infiniband-hdr", 100_000_000),
    "HDR": ("infiniband-hdr", 200_000_000),
    "NDR200": ("infiniband-ndr", 200_000_000),
    "NDR": ("infiniband-ndr", 400_000_000),
    "XDR": ("infiniband-xdr", 800_000_000),
}
TYPE_RATE = {v: k for k, v in RATE_TYPE.items()}
MEDIA_TYPE = {"DAC": "dac-passive", "ACC": "dac-active", "AOC": "aoc"}
FIBER_TYPE = {None: "mmf", "OM3": "mmf-om3", "OM4": "mmf-om4", "OM5": "mmf-om5", "OS2": "smf-os2"}
CABLE_MEDIA = {v: k for k, v in MEDIA_TYPE.items()}
CABLE_FIBER = {v: k for k, v in FIBER_TYPE.items()}
IFACE, FRONT, REAR = "dcim.interface", "dcim.frontport", "dcim.rearport"


class NetboxImportError(ValueError):
    """A NetBox CSV this importer cannot read back: `file:line: message`."""

    def __init__(self, file: str, line: int | None, message: str) -> None:
        where = f"{file}:{line}" if line is not None else file
        super().__init__(f"{where}: {message}")
        self.file, self.line, self.message = file, line, message


# ------------------------------------------------------------------------------------------ export


def slug(name: str) -> str:
    """NetBox slug: lower case letters, digits, `-` and `_`."""
    return re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-") or "x"


def words(**kv: object) -> str:
    """`key=value` words for a description; None values are left out."""
    return " ".join(f"{k}={v}" for k, v in kv.items() if v is not None)


def export_tables(index: Index) -> dict[str, list[dict[str, object]]]:
    """Every FILES table for a checked (and planned) environment."""
    inv = index.inv
    site = inv.site.name
    t: dict[str, list[dict[str, object]]] = {name: [] for name in FILES}
    t["manufacturers.csv"].append({"name": MANUFACTURER, "slug": slug(MANUFACTURER)})
    t["sites.csv"].append({"name": site, "slug": slug(site), "status": "active",
                           "physical_address": inv.site.location})
    for row in inv.site.rows:
        t["locations.csv"].append({"site": site, "name": row.name, "slug": slug(row.name), "status": "active",
                                   "description": words(index=row.index, pitch_m=row.pitch_m)})
    for rack in inv.racks:
        t["racks.csv"].append({
            "site": site, "location": rack.row, "name": rack.name, "status": "active", "width": 19,
            "u_height": rack.u_height, "outer_width": round(rack.width_m * 1000), "outer_unit": "mm",
            "description": words(position=rack.position, cooling=rack.cooling, power_budget_kw=rack.power_budget_kw,
                                 max_density_kw=rack.max_density_kw, floor_area_m2=rack.floor_area_m2,
                                 leak_sensors=rack.leak_sensors),
        })
    roles: dict[str, str] = {}
    types: dict[str, int] = {}
    row_of = {r.name: r.row for r in inv.racks}

    def device(name: str, role: str, dtype: str, rack: str, u: int, description: str = "") -> None:
        roles.setdefault(role, ROLE_COLORS.get(role, "607d8b"))
        t["devices.csv"].append({"name": name, "role": role, "manufacturer": MANUFACTURER, "device_type": dtype,
                                 "status": "active", "site": site, "location": row_of.get(rack), "rack": rack,
                                 "position": u, "face": "front", "description": description})

    for node in inv.nodes:
        hw = index.hardware[node.name]
        dtype = node.profile or f"{node.name}-hw"
        types.setdefault(dtype, hw.u_height)
        device(node.name, node.role, dtype, node.rack, node.u)
        t["power-ports.csv"].append({"device": node.name, "name": "PSU", "allocated_draw": round(hw.power_kw * 1000)})
        if hw.mgmt_netdev:
            t["interfaces.csv"].append({"device": node.name, "name": hw.mgmt_netdev, "type": "other",
                                        "mgmt_only": "true", "description": "management"})
        if hw.gpus is not None:
            for g in range(hw.gpus.count):
                numa = hw.gpus.numa[g] if g < len(hw.gpus.numa) else None
                extra = words(nvlink=hw.gpus.nvlink_topology) if g == 0 else ""
                t["inventory-items.csv"].append({
                    "device": node.name, "name": f"GPU{g}", "status": "active", "role": "gpu",
                    "manufacturer": MANUFACTURER, "part_id": hw.gpus.model,
                    "description": " ".join(p for p in (words(numa=numa), extra) if p)})
        disks: dict[str, int] = {}
        for dev in hw.storage:
            for _ in range(dev.count):
                disks[dev.kind] = disks.get(dev.kind, -1) + 1
                t["inventory-items.csv"].append({
                    "device": node.name, "name": f"{dev.kind}{disks[dev.kind]}", "status": "active", "role": "disk",
                    "part_id": dev.kind, "description": words(size_tb=dev.size_tb, role=dev.role)})
        for kind, cas in (("hca", hw.hcas), ("dpu", hw.dpus)):
            for ca in cas:
                t["inventory-items.csv"].append({
                    "device": node.name, "name": ca.name, "status": "active", "role": kind,
                    "manufacturer": MANUFACTURER, "part_id": ca.model,
                    "description": words(rail=getattr(ca, "rail", None), gpu=getattr(ca, "gpu", None), numa=ca.numa,
                                         netdev=getattr(ca, "netdev", None), pcie=ca.pcie,
                                         root_complex=getattr(ca, "root_complex", None),
                                         node_guid=getattr(ca, "node_guid", None))})
                for port in ca.ports:
                    kind_speed = RATE_TYPE[port.rate]
                    ib = port.link_layer == "InfiniBand"
                    t["interfaces.csv"].append({
                        "device": node.name, "name": f"{ca.name}/{port.port}", "type": kind_speed[0] if ib else "other",
                        "speed": kind_speed[1], "mgmt_only": "false", "wwn": _eui64(port.guid),
                        "description": "" if ib else words(rate=port.rate, link_layer=port.link_layer)})
    for sw in inv.switches:
        types.setdefault(sw.model, index.cat.switches[sw.model].ru if sw.model in index.cat.switches else 1)
        device(sw.name, SWITCH_ROLES[sw.role], sw.model, sw.rack, sw.u,
               words(guid=sw.guid, group=sw.group, rail=sw.rail, mgmt_ip=sw.mgmt_ip))
        count, rate = index.switch_ports.get(sw.name, (0, "HDR"))
        for p in range(1, count + 1):
            t["interfaces.csv"].append({"device": sw.name, "name": str(p), "type": RATE_TYPE[rate][0],
                                        "speed": RATE_TYPE[rate][1], "mgmt_only": "false"})
    for pp in inv.patch_panels:
        types.setdefault(f"MPO patch panel {pp.mpo_ports}", 1)
        device(pp.name, PANEL_ROLE, f"MPO patch panel {pp.mpo_ports}", pp.rack, pp.u)
    for name, color in roles.items():
        t["device-roles.csv"].append({"name": name, "slug": slug(name), "color": color})
    for model, u in types.items():
        t["device-types.csv"].append({"manufacturer": MANUFACTURER, "model": model, "slug": slug(model), "u_height": u})
    for name, color in ITEM_ROLES.items():
        t["inventory-item-roles.csv"].append({"name": name, "slug": name, "color": color})
    _panels_and_cables(index, t)
    return t


def _eui64(guid: str | None) -> str | None:
    """`0x0002c90300a1b2c3` -> `00:02:C9:03:00:A1:B2:C3` (NetBox's WWN form)."""
    if guid is None:
        return None
    digits = guid[2:].upper()
    return ":".join(digits[i : i + 2] for i in range(0, 16, 2))


def _groups_per_trunk(index: Index) -> dict[str, int]:
    """Lane groups (front port positions) of each trunk: 24 fibers over the fibers of one link."""
    per_link = index.cat.media["fiber"].fibers_per_link or {}
    rates = dict(zip((c.id for c in index.inv.cables), index.cable_rates, strict=True))
    out = {t.id: MPO_FIBERS // 8 for t in index.inv.trunks}
    for cable in index.inv.cables:
        rate = rates.get(cable.id)
        if cable.trunk in out and rate is not None:
            out[cable.trunk] = MPO_FIBERS // per_link.get(rate, 8)
    return out


def _panels_and_cables(index: Index, t: dict[str, list[dict[str, object]]]) -> None:
    inv = index.inv
    positions = _groups_per_trunk(index)
    rear: dict[tuple[str, str], str] = {}  # (trunk, panel) -> rear port name
    used: dict[str, int] = {}
    for trunk in inv.trunks:
        for panel in (trunk.a_panel, trunk.b_panel):
            used[panel] = used.get(panel, 0) + 1
            rear[(trunk.id, panel)] = f"MPO{used[panel]}"
    for pp in inv.patch_panels:
        own = {name: tid for (tid, panel), name in rear.items() if panel == pp.name}
        for k in range(1, max(pp.mpo_ports, used.get(pp.name, 0)) + 1):
            name = f"MPO{k}"
            n = positions[own[name]] if name in own else MPO_FIBERS // 8
            t["rear-ports.csv"].append({"device": pp.name, "name": name, "type": "mpo", "positions": n})
            for p in range(1, n + 1):
                t["front-ports.csv"].append({"device": pp.name, "name": f"{name}-{p}", "type": "lc",
                                             "rear_port": name, "rear_port_position": p})
    rack_of = {p.name: p.rack for p in inv.patch_panels}
    place = index.places
    cables = t["cables.csv"]
    for trunk in inv.trunks:
        cables.append({
            "side_a_device": trunk.a_panel, "side_a_type": REAR, "side_a_name": rear[(trunk.id, trunk.a_panel)],
            "side_b_device": trunk.b_panel, "side_b_type": REAR, "side_b_name": rear[(trunk.id, trunk.b_panel)],
            "type": FIBER_TYPE[trunk.fiber_type], "status": "connected", "label": trunk.id,
            "length": num_text(trunk.length_m), "length_unit": "m", "description": words(polarity=trunk.polarity)})
    trunks = index.trunks
    for cable in inv.cables:
        kind = FIBER_TYPE[cable.fiber_type] if cable.media == "fiber" else MEDIA_TYPE[cable.media]
        a, b = _iface(cable.a.device, cable.a.hca, cable.a.port), _iface(cable.b.device, cable.b.hca, cable.b.port)
        riding = trunks.get(cable.trunk or "")
        if riding is None or cable.lane_group is None:
            cables.append({"side_a_device": cable.a.device, "side_a_type": IFACE, "side_a_name": a,
                           "side_b_device": cable.b.device, "side_b_type": IFACE, "side_b_name": b, "type": kind,
                           "status": "connected", "label": cable.id, "length": num_text(cable.length_m),
                           "length_unit": "m", "description": cable.label})
            continue
        a_panel, b_panel = riding.a_panel, riding.b_panel
        a_rack = place.get(cable.a.device, ("", 0))[0]
        if a_rack != rack_of.get(a_panel) and a_rack == rack_of.get(b_panel):
            a_panel, b_panel = b_panel, a_panel  # the link's a end is at the trunk's b panel
        pos = cable.lane_group + 1
        for dev, name, panel, first in ((cable.a.device, a, a_panel, True), (cable.b.device, b, b_panel, False)):
            cables.append({"side_a_device": dev, "side_a_type": IFACE, "side_a_name": name,
                           "side_b_device": panel, "side_b_type": FRONT,
                           "side_b_name": f"{rear[(riding.id, panel)]}-{pos}", "type": kind, "status": "connected",
                           "label": cable.id, "length": num_text(cable.length_m) if first else None,
                           "length_unit": "m" if first else None, "description": cable.label if first else None})


def _iface(device: str, hca: str | None, port: int) -> str:
    return f"{hca}/{port}" if hca is not None else str(port)


def csv_files(tables: dict[str, list[dict[str, object]]]) -> dict[str, str]:
    """The tables as CSV text with a header line (RFC 4180 quoting, the formula guard)."""
    out: dict[str, str] = {}
    for name, columns in FILES.items():
        rows: list[Iterable[object]] = [columns]
        rows += [[_cell(r.get(c)) for c in columns] for r in tables[name]]
        out[name] = csv_text(rows)
    return out


def _cell(value: object) -> object:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value

