"""A synthetic inventory for sizing and comparing designs without a real one.

`plan size` and `plan compare` build one of these and run the real generator on it. The
floor: each scalable unit is a block of node racks with a network rack in the middle,
`sus_per_row` blocks to a row; the switch row sits in the middle of the rows with as
many racks as the spines and cores need. Nodes carry `ports_per_node` single-port HCAs,
one per rail.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..catalog import Catalog
from ..model.fabric import FabricSpec
from ..model.hardware import Gpus, Hca, HcaPort, Profile
from ..model.inventory import Inventory
from ..model.nodes import Node
from ..model.site import Rack, Row, Site
from .design import resolve, switch_type

SWITCH_ROW = "row-sw"
HCA_FOR_RATE = {"EDR": "ConnectX-5", "HDR100": "ConnectX-6", "HDR": "ConnectX-6",
                "NDR200": "ConnectX-7", "NDR": "ConnectX-7", "XDR": "ConnectX-7"}


@dataclass(frozen=True)
class Shape:
    nodes: int
    ports_per_node: int
    rate: str | None = None  # default: the spec's rate
    hca_model: str | None = None  # default: by rate
    gpu_model: str | None = None
    gpus_per_node: int = 8
    nodes_per_rack: int = 4
    node_u: int = 8
    sus_per_row: int = 2


def synthetic_inventory(shape: Shape, spec: FabricSpec, cat: Catalog, name: str = "synthetic") -> Inventory:
    """An inventory with `shape.nodes` nodes laid out for `spec` (whose switch_row it sets)."""
    rate = shape.rate or spec.rate
    spec = spec.model_copy(update={"switch_row": SWITCH_ROW, "rate": rate})
    design = resolve(spec, cat, shape.nodes, spec.rails or shape.ports_per_node)
    su_size = design.su_size
    gpu_w = cat.gpus[shape.gpu_model].power_w if shape.gpu_model in cat.gpus else 0.0
    node_kw = round(shape.gpus_per_node * gpu_w / 1000 + 2.0, 2) if shape.gpu_model else 1.0
    per_rack = max(1, min(shape.nodes_per_rack, (42 - 2) // shape.node_u))
    cooling = "air" if per_rack * node_kw <= 35 else "cold-plate"
    sensors = 0 if cooling == "air" else 2
    racks_per_su = math.ceil(su_size / per_rack)
    rows_needed = math.ceil(design.sus / shape.sus_per_row)
    mid = rows_needed // 2
    rows = [Row(name=f"row-{i + 1:02d}", index=i if i < mid else i + 1) for i in range(rows_needed)]
    rows.insert(mid, Row(name=SWITCH_ROW, index=mid))
    racks: list[Rack] = []
    nodes: list[Node] = []
    for su in range(design.sus):
        row = rows[su // shape.sus_per_row + (1 if su // shape.sus_per_row >= mid else 0)].name
        base = (su % shape.sus_per_row) * (racks_per_su + 1)
        half = racks_per_su // 2
        racks.append(Rack(name=f"su{su + 1:02d}-net", row=row, position=base + half, cooling="air"))
        for k in range(racks_per_su):
            racks.append(Rack(name=f"su{su + 1:02d}-r{k + 1:02d}", row=row,
                              position=base + (k if k < half else k + 1), cooling=cooling, leak_sensors=sensors))
        for k in range(min(su_size, shape.nodes - su * su_size)):
            n = su * su_size + k
            nodes.append(Node.model_construct(
                name=f"node{n + 1:05d}", rack=f"su{su + 1:02d}-r{k // per_rack + 1:02d}",
                u=2 + (k % per_rack) * shape.node_u, role="compute", profile="node"))
    spine = switch_type(cat, spec.spine_model or spec.leaf_model, spec.split, "spine_model")
    per_sw_rack = max(1, min(21 // spine.ru, math.floor(35_000 / spine.power_w)))
    upper = design.spines + design.cores
    for i in range(math.ceil(upper / per_sw_rack) + 1):
        racks.append(Rack(name=f"sw{i + 1:02d}", row=SWITCH_ROW, position=i, cooling="air"))
    hca_model = shape.hca_model or HCA_FOR_RATE.get(rate, "ConnectX-7")
    gpus = Gpus(model=shape.gpu_model, count=shape.gpus_per_node) if shape.gpu_model else None
    profile = Profile(
        name="node", u_height=shape.node_u, power_kw=node_kw, gpus=gpus,
        hcas=[Hca(name=f"mlx5_{r}", model=hca_model, rail=r, ports=[HcaPort(port=1, rate=rate)])
              for r in range(shape.ports_per_node)])
    site = Site(name=name, rows=sorted(rows, key=lambda r: r.index))
    return Inventory.model_construct(
        site=site, racks=racks, profiles=[profile], nodes=nodes, switches=[], cables=[], patch_panels=[],
        trunks=[], fabric=spec, prices=None)
