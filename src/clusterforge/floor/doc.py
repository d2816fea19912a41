"""The floor page's document (issue #37; docs/floor.md): the declared cluster as the page draws it, from the model.

Three views read it: the floor (rows of racks, each device in its units, the rack's cooling and leak sensors),
the fabric (scalable units with their leaves, the spines and cores, rail planes, each switch's uplink count and
cabled ports) and a node (its GPUs and HCAs, each HCA port's cable with its id and label, the MPO trunk and lane
group it rides, and the far end: which cable to pull). Trunks and patch panels are listed once and referred to by
id, so a 2,048-node floor stays small. Every name is data: the page puts it into the document as text, never as
markup (floor/static/floor.js). Pure.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ..model.cabling import Cable
from ..model.index import Index
from ..model.place_text import cable_label

SCHEMA = 1
"""The document's version (`schema` in floor.json): the page refuses one it does not know."""


def floor_doc(index: Index, environment: str) -> dict[str, Any]:
    """The page's document (JSON-ready): site, rows -> racks -> slots, the fabric's switches by tier and unit.
    A node's or a switch's ports and cables are their own documents (`node_doc`, `switch_doc`), fetched when one
    is opened: at 2,048 nodes the floor stays a few hundred kB."""
    inv = index.inv
    slots: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for node in inv.nodes:
        hw = index.hardware[node.name]
        slots[node.rack].append({"name": node.name, "kind": "node", "u": node.u, "height": hw.u_height,
                                 "role": node.role, "profile": node.profile})
    for sw in inv.switches:
        model = index.cat.switches.get(sw.model)
        slots[sw.rack].append({"name": sw.name, "kind": "switch", "u": sw.u, "height": model.ru if model else 1,
                               "role": sw.role, "model": sw.model})
    for panel in inv.patch_panels:
        slots[panel.rack].append({"name": panel.name, "kind": "panel", "u": panel.u, "height": 1,
                                  "role": "patch-panel"})
    rows = []
    racks_of: dict[str, list[Any]] = defaultdict(list)
    for rack in inv.racks:
        racks_of[rack.row].append(rack)
    order = {r.name: r.index for r in inv.site.rows}
    for row in sorted(racks_of, key=lambda r: (order.get(r, 1 << 30), r)):
        rows.append({"name": row, "racks": [
            {"name": r.name, "position": r.position, "u_height": r.u_height, "cooling": r.cooling,
             "leak_sensors": r.leak_sensors, "slots": sorted(slots.get(r.name, []), key=lambda s: -s["u"])}
            for r in sorted(racks_of[row], key=lambda r: (r.position, r.name))]})
    return {
        "schema": SCHEMA,
        "environment": environment,
        "site": {"name": inv.site.name, "location": inv.site.location},
        "rows": rows,
        "fabric": _fabric(index),
    }


def _far(cable: Cable, key: tuple[str, str | None, int]) -> tuple[str, str | None, int]:
    return cable.b.key if cable.a.key == key else cable.a.key


def _end(key: tuple[str, str | None, int]) -> str:
    device, hca, port = key
    return f"{device} {hca}/{port}" if hca else f"{device}/{port}"


def _cable(index: Index, cable: Cable, here: tuple[str, str | None, int]) -> dict[str, Any]:
    far = _far(cable, here)
    place = index.places.get(far[0])
    trunk = index.trunks.get(cable.trunk) if cable.trunk else None
    panels = index.panels
    return {"id": cable.id, "label": cable_label(cable), "media": cable.media, "length_m": cable.length_m,
            "trunk": cable.trunk, "lane_group": cable.lane_group,
            "panels": [{"name": n, "rack": panels[n].rack if n in panels else None,
                        "u": panels[n].u if n in panels else None}
                       for n in ((trunk.a_panel, trunk.b_panel) if trunk is not None else ())],
            "far": _end(far), "far_device": far[0], "far_rack": place[0] if place else None,
            "far_u": place[1] if place else None}


def node_doc(index: Index, name: str) -> dict[str, Any] | None:
    """A node's page: GPUs, HCAs, each HCA port's cable (id, label, trunk and lane group, far end); None when
    the inventory has no such node."""
    node = index.nodes.get(name)
    if node is None:
        return None
    hw = index.hardware[name]
    hcas = []
    for hca in hw.hcas:
        ports = []
        for p in hca.ports:
            key = (name, hca.name, p.port)
            cable = index.cable_at.get(key)
            ports.append({"port": p.port, "rate": index.port_rate(name, hca.name, p.port),
                          "cable": _cable(index, cable, key) if cable is not None else None})
        hcas.append({"name": hca.name, "model": hca.model, "rail": hca.rail, "gpu": hca.gpu, "ports": ports})
    gpus = hw.gpus
    return {"schema": SCHEMA, "name": name, "kind": "node", "rack": node.rack, "u": node.u, "height": hw.u_height,
            "role": node.role, "profile": node.profile, "os": hw.os,
            "gpus": {"model": gpus.model, "count": gpus.count} if gpus is not None else None,
            "hcas": hcas, "dpus": [d.name for d in hw.dpus]}


def switch_doc(index: Index, name: str) -> dict[str, Any] | None:
    """A switch's page: every cabled port with its cable and far end; None when there is no such switch."""
    sw = index.switches.get(name)
    if sw is None:
        return None
    model = index.cat.switches.get(sw.model)
    count = model.ports * (model.split.ways if sw.split and model.split else 1) if model else 0
    ports = []
    for port in range(1, count + 1):
        cable = index.cable_at.get((name, None, port))
        ports.append({"port": port, "cable": _cable(index, cable, (name, None, port)) if cable is not None
                      else None})
    return {"schema": SCHEMA, "name": name, "kind": "switch", "role": sw.role, "model": sw.model, "rack": sw.rack,
            "u": sw.u, "group": sw.group, "rail": sw.rail, "ports": ports}


def _fabric(index: Index) -> dict[str, Any]:
    """Switches by tier, their group (scalable unit), rail and plane, uplink and cabled port counts."""
    planes = index.switch_planes
    up: dict[str, int] = defaultdict(int)
    cabled: dict[str, int] = defaultdict(int)
    for cable in index.inv.cables:
        for here in (cable.a.key, cable.b.key):
            sw = index.switches.get(here[0]) if here[1] is None else None
            if sw is None:
                continue
            cabled[sw.name] += 1
            far = _far(cable, here)
            far_sw = index.switches.get(far[0]) if far[1] is None else None
            if far_sw is not None and _tier(far_sw.role) > _tier(sw.role):
                up[sw.name] += 1
    switches = {sw.name: {"role": sw.role, "model": sw.model, "rack": sw.rack, "u": sw.u, "group": sw.group,
                          "rail": sw.rail, "plane": planes.get(sw.name), "uplinks": up[sw.name],
                          "cabled": cabled[sw.name]}
                for sw in index.inv.switches}
    groups: dict[str, list[str]] = defaultdict(list)
    for name, s in switches.items():
        if s["role"] == "leaf":
            groups["su" + (f"{s['group']:02d}" if s["group"] is not None else "-")].append(name)
    return {
        "switches": switches,
        "units": [{"name": g, "leaves": sorted(ls)} for g, ls in sorted(groups.items())],
        "spines": sorted(n for n, s in switches.items() if s["role"] == "spine"),
        "cores": sorted(n for n, s in switches.items() if s["role"] == "core"),
        "planes": sorted({p for p in planes.values() if p is not None}),
    }


def _tier(role: str) -> int:
    return {"leaf": 0, "spine": 1, "core": 2}.get(role, -1)
