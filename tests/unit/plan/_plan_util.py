"""Helpers shared by the planner tests: small synthetic inventories and the prod one, replanned."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from clusterforge.catalog import catalog
from clusterforge.inventory.load import load_inventory
from clusterforge.model import Cable, FabricSpec, Inventory
from clusterforge.plan import Plan, plan_fabric
from clusterforge.plan.synthetic import Shape, synthetic_inventory

ROOT = Path(__file__).resolve().parents[3]


def synth(nodes: int, ports: int, **spec: Any) -> Inventory:
    """A synthetic inventory of `nodes` nodes with `ports` single-port HCAs, laid out for `spec`."""
    shape_keys = {"gpu_model", "gpus_per_node", "nodes_per_rack", "node_u", "sus_per_row", "hca_model"}
    shape = {k: spec.pop(k) for k in list(spec) if k in shape_keys}
    spec.setdefault("rate", "NDR")
    spec.setdefault("leaf_model", "QM9700")
    return synthetic_inventory(Shape(nodes=nodes, ports_per_node=ports, **shape), FabricSpec(**spec), catalog())


def prod_without_fabric(**spec: Any) -> Inventory:
    """inventories/prod with its hand-made switches and cables removed and a `fabric` spec added."""
    inv, _ = load_inventory(ROOT / "inventories" / "prod")
    spec.setdefault("switch_row", "row-b")
    return inv.model_copy(update={"switches": [], "cables": [], "patch_panels": [], "trunks": [],
                                  "fabric": FabricSpec(**spec)})


def truncate(inv: Inventory, nodes: int) -> Inventory:
    """The same floor with only the first `nodes` nodes (what a smaller, earlier cluster looked like)."""
    return inv.model_copy(update={"nodes": inv.nodes[:nodes]})


def with_plan(inv: Inventory, plan: Plan | None = None) -> Inventory:
    plan = plan or plan_fabric(inv)
    return inv.model_copy(update={"switches": list(plan.switches), "cables": list(plan.cables),
                                  "patch_panels": list(plan.patch_panels), "trunks": list(plan.trunks)})


def links_between(plan: Plan) -> Counter[tuple[str, str]]:
    """Links per (lower switch, upper switch) pair."""
    out: Counter[tuple[str, str]] = Counter()
    for c in plan.cables:
        if c.a.hca is None:
            out[(c.a.device, c.b.device)] += 1
    return out


def cable_key(c: Cable) -> tuple[object, ...]:
    return (c.id, str(c.a), str(c.b), c.media, c.length_m, c.fiber_type, c.trunk, c.lane_group)
