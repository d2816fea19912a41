"""NetBox bulk-import CSVs back into an environment: the import half of `netbox.py`.

Pure: CSV texts in (`read_tables`), the inventory's YAML sections out (`import_tables`);
`cli/import_.py` does the I/O. The file set, columns and choice maps are `netbox.py`'s.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

from ..catalog import Catalog
from ..util.csvtext import FORMULA_START
from ..util.guid import pad_guid
from .netbox import (
    CABLE_FIBER,
    CABLE_MEDIA,
    FILES,
    FRONT,
    IFACE,
    ITEM_ROLES,
    PANEL_ROLE,
    REAR,
    SWITCH_ROLES,
    TYPE_RATE,
    NetboxImportError,
)


@dataclass
class _Table:
    file: str
    rows: list[tuple[int, dict[str, str]]]  # (line, row)


class _Lines:
    """The text's lines for csv, numbered from 1; `start` is the line the record being read began on (a quoted
    cell may span lines, and csv's own `line_num` is the record's last line)."""

    def __init__(self, text: str) -> None:
        self._lines = io.StringIO(text, newline="")
        self.n = 0
        self.start = 1
        self.fresh = True  # the next line that is not blank begins a record

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        line = next(self._lines)
        self.n += 1
        if self.fresh and line.strip("\r\n"):
            self.start, self.fresh = self.n, False
        return line

    def record_read(self) -> int:
        """The first line of the record just read; the next record starts afresh."""
        self.fresh = True
        return self.start


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
        lines = _Lines(text)
        reader = csv.DictReader(lines, strict=True)
        rows = []
        try:
            header = reader.fieldnames or []
            needed = [c for c in columns if c in _REQUIRED.get(name, ())]
            lacking = [c for c in needed if c not in header]
            if lacking:
                raise NetboxImportError(name, lines.start,
                                        f"no column {', '.join(lacking)} (header: {', '.join(header)})")
            lines.record_read()  # the header
            for row in reader:
                rows.append((lines.record_read(), {k: _uncell(v) for k, v in row.items() if isinstance(k, str)}))
        except csv.Error as exc:
            raise NetboxImportError(name, lines.start, f"not CSV: {exc}") from None
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
                port["guid"] = pad_guid(r["wwn"].replace(":", ""))  # EUI-64 as NetBox writes it -> 0x + 16 hex
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

