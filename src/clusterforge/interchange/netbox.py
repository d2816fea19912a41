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

Both directions are pure: tables in, tables out. `cli/export.py` and `cli/import_.py` do the I/O.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..catalog import Catalog
from ..csvtext import FORMULA_START, csv_text
from ..model.index import Index

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
            "length": _num(trunk.length_m), "length_unit": "m", "description": words(polarity=trunk.polarity)})
    trunks = index.trunks
    for cable in inv.cables:
        kind = FIBER_TYPE[cable.fiber_type] if cable.media == "fiber" else MEDIA_TYPE[cable.media]
        a, b = _iface(cable.a.device, cable.a.hca, cable.a.port), _iface(cable.b.device, cable.b.hca, cable.b.port)
        riding = trunks.get(cable.trunk or "")
        if riding is None or cable.lane_group is None:
            cables.append({"side_a_device": cable.a.device, "side_a_type": IFACE, "side_a_name": a,
                           "side_b_device": cable.b.device, "side_b_type": IFACE, "side_b_name": b, "type": kind,
                           "status": "connected", "label": cable.id, "length": _num(cable.length_m),
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
                           "label": cable.id, "length": _num(cable.length_m) if first else None,
                           "length_unit": "m" if first else None, "description": cable.label if first else None})


def _iface(device: str, hca: str | None, port: int) -> str:
    return f"{hca}/{port}" if hca is not None else str(port)


def _num(value: float) -> str:
    return f"{value:g}"


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


# ------------------------------------------------------------------------------------------ import


@dataclass
class _Table:
    file: str
    rows: list[tuple[int, dict[str, str]]]  # (line, row)


def read_tables(texts: dict[str, str]) -> dict[str, _Table]:
    """Parse each FILES CSV (a missing optional file is empty); a missing column is an error."""
    out: dict[str, _Table] = {}
    for name, columns in FILES.items():
        text = texts.get(name)
        if text is None:
            if name in ("sites.csv", "devices.csv"):
                raise NetboxImportError(name, None, "missing: an export has sites.csv and devices.csv at least")
            out[name] = _Table(name, [])
            continue
        reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
        rows = []
        try:
            header = reader.fieldnames or []
            needed = [c for c in columns if c in _REQUIRED.get(name, ())]
            lacking = [c for c in needed if c not in header]
            if lacking:
                raise NetboxImportError(name, 1, f"no column {', '.join(lacking)} (header: {', '.join(header)})")
            for row in reader:
                rows.append((reader.line_num, {k: _uncell(v) for k, v in row.items() if isinstance(k, str)}))
        except csv.Error as exc:
            raise NetboxImportError(name, reader.line_num, f"not CSV: {exc}") from None
        out[name] = _Table(name, rows)
    return out


_REQUIRED: dict[str, tuple[str, ...]] = {
    "sites.csv": ("name",),
    "locations.csv": ("name",),
    "racks.csv": ("location", "name", "u_height"),
    "device-types.csv": ("model", "u_height"),
    "devices.csv": ("name", "role", "device_type", "rack", "position"),
    "interfaces.csv": ("device", "name", "type"),
    "inventory-items.csv": ("device", "name", "role", "part_id"),
    "rear-ports.csv": ("device", "name", "positions"),
    "front-ports.csv": ("device", "name", "rear_port", "rear_port_position"),
    "cables.csv": ("side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name",
                   "type", "label"),
}


def _uncell(value: str | None) -> str:
    text = (value or "").strip()
    if text.startswith("'") and text[1:2] and text[1:].startswith(FORMULA_START):
        return text[1:]  # the formula guard csv_cell added
    return text


def parse_words(text: str) -> dict[str, str]:
    """`key=value` words of a description (other words are ignored)."""
    out: dict[str, str] = {}
    for word in text.split():
        key, sep, value = word.partition("=")
        if sep and key and value:
            out[key] = value
    return out


def import_tables(tables: dict[str, _Table], cat: Catalog) -> dict[str, Any]:
    """An inventory (plain data, the YAML's sections) from NetBox tables."""
    return _Importer(tables, cat).run()


class _Importer:
    def __init__(self, tables: dict[str, _Table], cat: Catalog) -> None:
        self.t = tables
        self.cat = cat

    def fail(self, table: str, line: int | None, message: str) -> NetboxImportError:
        return NetboxImportError(table, line, message)

    def num(self, table: str, line: int, value: str, what: str, kind: type = int) -> Any:
        try:
            return kind(value)
        except ValueError:
            raise self.fail(table, line, f"{what}: {value!r} is not a number") from None

    def run(self) -> dict[str, Any]:
        sites = self.t["sites.csv"].rows
        if len(sites) != 1:
            raise self.fail("sites.csv", None, f"one site expected, found {len(sites)}")
        _, site_row = sites[0]
        site: dict[str, Any] = {"name": site_row["name"]}
        if site_row.get("physical_address"):
            site["location"] = site_row["physical_address"]
        rows = []
        for i, (line, r) in enumerate(self.t["locations.csv"].rows):
            kv = parse_words(r.get("description", ""))
            row: dict[str, Any] = {"name": r["name"], "index": self.num("locations.csv", line, kv.get("index", str(i)),
                                                                       "index")}
            if "pitch_m" in kv:
                row["pitch_m"] = self.num("locations.csv", line, kv["pitch_m"], "pitch_m", float)
            rows.append(row)
        site["rows"] = rows
        racks = [self.rack(line, r, i) for i, (line, r) in enumerate(self.t["racks.csv"].rows)]
        heights = {r["model"]: self.num("device-types.csv", line, r["u_height"], "u_height")
                   for line, r in self.t["device-types.csv"].rows}
        items = self.items()
        ifaces: dict[str, list[tuple[int, dict[str, str]]]] = {}
        for line, r in self.t["interfaces.csv"].rows:
            ifaces.setdefault(r["device"], []).append((line, r))
        power = {r["device"]: self.num("power-ports.csv", line, r.get("allocated_draw") or "0", "allocated_draw")
                 for line, r in self.t["power-ports.csv"].rows}
        switches, nodes, panels = [], [], []
        hardware: dict[str, dict[str, Any]] = {}
        profiles: dict[str, dict[str, Any]] = {}
        for line, r in self.t["devices.csv"].rows:
            role, dtype = r["role"], r["device_type"]
            if dtype not in heights and role != PANEL_ROLE:
                raise self.fail("devices.csv", line, f"device type {dtype!r} is not in device-types.csv")
            u = self.num("devices.csv", line, r["position"], "position")
            if role == PANEL_ROLE:
                panels.append({"name": r["name"], "rack": r["rack"], "u": u})
            elif role in SWITCH_ROLES.values():
                kv = parse_words(r.get("description", ""))
                sw: dict[str, Any] = {"name": r["name"], "model": dtype,
                                      "role": next(k for k, v in SWITCH_ROLES.items() if v == role),
                                      "rack": r["rack"], "u": u}
                for key in ("guid", "mgmt_ip"):
                    if key in kv:
                        sw[key] = kv[key]
                for key in ("group", "rail"):
                    if key in kv:
                        sw[key] = self.num("devices.csv", line, kv[key], key)
                model = self.cat.switches.get(dtype)
                if model is not None and len(ifaces.get(r["name"], [])) > model.ports:
                    sw["split"] = True  # more interfaces than the model has ports: split ports
                switches.append(sw)
            else:
                hw = self.node_hardware(r["name"], heights[dtype], power.get(r["name"]), items.get(r["name"], {}),
                                        ifaces.get(r["name"], []))
                node: dict[str, Any] = {"name": r["name"], "rack": r["rack"], "u": u, "role": role}
                if profiles.setdefault(dtype, hw) == hw:
                    node["profile"] = dtype
                else:
                    node.update(hw)  # differs from its device type's first device: its own hardware
                hardware[r["name"]] = hw
                nodes.append(node)
        trunks, cables = self.cables({p["name"] for p in panels})
        for p in panels:
            p["mpo_ports"] = sum(1 for _, r in self.t["rear-ports.csv"].rows if r["device"] == p["name"]) or 24
        inv: dict[str, Any] = {
            "site": site, "racks": racks,
            "profiles": [{"name": name, **hw} for name, hw in profiles.items()],
            "nodes": nodes, "switches": switches, "patch_panels": panels, "trunks": trunks, "cables": cables,
        }
        return inv

    def rack(self, line: int, r: dict[str, str], i: int) -> dict[str, Any]:
        kv = parse_words(r.get("description", ""))
        rack: dict[str, Any] = {"name": r["name"], "row": r["location"],
                                "position": self.num("racks.csv", line, kv.get("position", str(i)), "position"),
                                "u_height": self.num("racks.csv", line, r["u_height"], "u_height")}
        if r.get("outer_width"):
            width = self.num("racks.csv", line, r["outer_width"], "outer_width", float)
            rack["width_m"] = width * (25.4 if r.get("outer_unit") == "in" else 1.0) / 1000
        if "cooling" in kv:
            rack["cooling"] = kv["cooling"]
        for key in ("power_budget_kw", "max_density_kw", "floor_area_m2"):
            if key in kv:
                rack[key] = self.num("racks.csv", line, kv[key], key, float)
        if "leak_sensors" in kv:
            rack["leak_sensors"] = self.num("racks.csv", line, kv["leak_sensors"], "leak_sensors")
        return rack

    def items(self) -> dict[str, dict[str, list[tuple[int, dict[str, str]]]]]:
        out: dict[str, dict[str, list[tuple[int, dict[str, str]]]]] = {}
        for line, r in self.t["inventory-items.csv"].rows:
            if r["role"] not in ITEM_ROLES:
                continue  # an item clusterforge does not model (a PSU, a fan, ...)
            out.setdefault(r["device"], {}).setdefault(r["role"], []).append((line, r))
        return out

    def node_hardware(self, name: str, u_height: int, draw_w: int | None,
                      items: dict[str, list[tuple[int, dict[str, str]]]],
                      ifaces: list[tuple[int, dict[str, str]]]) -> dict[str, Any]:
        hw: dict[str, Any] = {"u_height": u_height}
        if draw_w is not None:
            hw["power_kw"] = draw_w / 1000
        gpus = items.get("gpu", [])
        if gpus:
            first = parse_words(gpus[0][1].get("description", ""))
            numa = [parse_words(r.get("description", "")).get("numa") for _, r in gpus]
            hw["gpus"] = {"model": gpus[0][1]["part_id"], "count": len(gpus),
                          "nvlink_topology": first.get("nvlink", "nvswitch")}
            if all(n is not None for n in numa):
                hw["gpus"]["numa"] = [self.num("inventory-items.csv", gpus[0][0], str(n), "numa") for n in numa]
        ports: dict[str, list[dict[str, Any]]] = {}
        for line, r in ifaces:
            if r.get("mgmt_only") == "true":
                if r["name"] != "eth0":
                    hw["mgmt_netdev"] = r["name"]
                continue
            owner, sep, num = r["name"].rpartition("/")
            if not sep:
                raise self.fail("interfaces.csv", line, f"{name} interface {r['name']!r} is not <hca>/<port>")
            speed = self.num("interfaces.csv", line, r.get("speed") or "0", "speed")
            kv = parse_words(r.get("description", ""))
            rate = kv.get("rate") or TYPE_RATE.get((r["type"], speed))
            if rate is None:
                raise self.fail("interfaces.csv", line, f"type {r['type']} at {speed} kbit/s is no InfiniBand rate")
            port: dict[str, Any] = {"port": self.num("interfaces.csv", line, num, "port"), "rate": rate}
            if kv.get("link_layer"):
                port["link_layer"] = kv["link_layer"]
            if r.get("wwn"):
                port["guid"] = "0x" + r["wwn"].replace(":", "").lower()
            ports.setdefault(owner, []).append(port)
        storage: list[dict[str, Any]] = []
        for line, r in items.get("disk", []):
            kv = parse_words(r.get("description", ""))
            size = self.num("inventory-items.csv", line, kv.get("size_tb", ""), "size_tb", float)
            if storage and (storage[-1]["kind"], storage[-1]["size_tb"], storage[-1]["role"]) == (
                    r["part_id"], size, kv.get("role", "scratch")):
                storage[-1]["count"] += 1
            else:
                storage.append({"kind": r["part_id"], "count": 1, "size_tb": size, "role": kv.get("role", "scratch")})
        if storage:
            hw["storage"] = storage
        for kind, key in (("hca", "hcas"), ("dpu", "dpus")):
            out = []
            for line, r in items.get(kind, []):
                kv = parse_words(r.get("description", ""))
                ca: dict[str, Any] = {"name": r["name"], "model": r["part_id"], "ports": ports.pop(r["name"], [])}
                if not ca["ports"]:
                    raise self.fail("inventory-items.csv", line, f"{name} {r['name']} has no interface "
                                    f"{r['name']}/<port> in interfaces.csv")
                for word in (("rail", "gpu", "numa") if kind == "hca" else ("numa", "root_complex")):
                    if word in kv:
                        ca[word] = self.num("inventory-items.csv", line, kv[word], word)
                for word in (("netdev", "pcie", "node_guid") if kind == "hca" else ("pcie",)):
                    if word in kv:
                        ca[word] = kv[word]
                out.append(ca)
            if out:
                hw[key] = out
        if ports:
            stray = sorted(ports)[0]
            raise self.fail("interfaces.csv", None, f"{name} has ports on {stray}, which is not an HCA or DPU "
                            "inventory item")
        return hw

    def cables(self, panels: set[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        front = {(r["device"], r["name"]): (r["rear_port"], self.num("front-ports.csv", line, r["rear_port_position"],
                                                                      "rear_port_position"))
                 for line, r in self.t["front-ports.csv"].rows}
        trunk_at: dict[tuple[str, str], dict[str, Any]] = {}
        trunks: list[dict[str, Any]] = []
        cords: dict[str, list[tuple[int, dict[str, str]]]] = {}
        cables: list[dict[str, Any]] = []
        for line, r in self.t["cables.csv"].rows:
            sides = (r["side_a_type"], r["side_b_type"])
            if sides == (REAR, REAR):
                fiber = CABLE_FIBER.get(r["type"], "unknown")
                if fiber == "unknown":
                    raise self.fail("cables.csv", line, f"trunk {r['label']}: cable type {r['type']!r} is not fiber")
                trunk: dict[str, Any] = {"id": r["label"], "a_panel": r["side_a_device"], "b_panel": r["side_b_device"],
                                         "length_m": self.num("cables.csv", line, r.get("length") or "0", "length",
                                                              float)}
                if fiber is not None:
                    trunk["fiber_type"] = fiber
                kv = parse_words(r.get("description", ""))
                if "polarity" in kv:
                    trunk["polarity"] = kv["polarity"]
                trunks.append(trunk)
                trunk_at[(r["side_a_device"], r["side_a_name"])] = trunk
                trunk_at[(r["side_b_device"], r["side_b_name"])] = trunk
            elif sides == (IFACE, IFACE):
                cables.append(self.cable(line, r, r, r))
            elif sides == (IFACE, FRONT):
                cords.setdefault(r["label"], []).append((line, r))
            else:
                raise self.fail("cables.csv", line, f"a cable between {sides[0]} and {sides[1]} is not one "
                                "clusterforge models")
        for label, pair in cords.items():
            line = pair[0][0]
            if len(pair) != 2:
                raise self.fail("cables.csv", line, f"link {label} rides a trunk: expected two patch cords with "
                                f"that label, found {len(pair)}")
            (la, a), (lb, b) = pair
            if not a.get("length") and b.get("length"):
                (la, a), (lb, b) = (lb, b), (la, a)
            lanes = []
            for ln, cord in ((la, a), (lb, b)):
                key = (cord["side_b_device"], cord["side_b_name"])
                if key not in front:
                    raise self.fail("cables.csv", ln, f"front port {key[1]} of {key[0]} is not in front-ports.csv")
                rear_port, pos = front[key]
                rides = trunk_at.get((key[0], rear_port))
                if rides is None:
                    raise self.fail("cables.csv", ln, f"no trunk on rear port {rear_port} of {key[0]}")
                lanes.append((rides["id"], pos))
            if lanes[0] != lanes[1]:
                raise self.fail("cables.csv", lb, f"link {label}: its cords reach trunk/position {lanes[0]} and "
                                f"{lanes[1]}, which are not the two ends of one lane group")
            cable = self.cable(la, a, a, b)
            cable["trunk"], cable["lane_group"] = lanes[0][0], lanes[0][1] - 1
            cables.append(cable)
        return trunks, cables

    def cable(self, line: int, r: dict[str, str], a: dict[str, str], b: dict[str, str]) -> dict[str, Any]:
        kind = r["type"]
        side_b = ("side_b_device", "side_b_name") if a is b else ("side_a_device", "side_a_name")
        cable: dict[str, Any] = {"id": r["label"], "a": self.end(line, a["side_a_device"], a["side_a_name"]),
                                 "b": self.end(line, b[side_b[0]], b[side_b[1]]),
                                 "length_m": self.num("cables.csv", line, r.get("length") or "0", "length", float)}
        if kind in CABLE_MEDIA:
            cable["media"] = CABLE_MEDIA[kind]
        elif kind in CABLE_FIBER:
            cable["media"] = "fiber"
            if CABLE_FIBER[kind] is not None:
                cable["fiber_type"] = CABLE_FIBER[kind]
        else:
            known = ", ".join([*CABLE_MEDIA, *(k for k in CABLE_FIBER if k)])
            raise self.fail("cables.csv", line, f"cable type {kind!r} is none of {known}")
        if r.get("description"):
            cable["label"] = r["description"]
        return cable

    def end(self, line: int, device: str, name: str) -> str:
        hca, sep, port = name.rpartition("/")
        if not port.isdigit():
            raise self.fail("cables.csv", line,
                            f"{device} interface {name!r} is neither a port number nor <hca>/<port>")
        return f"{device}/{hca}/{port}" if sep else f"{device}/{port}"

