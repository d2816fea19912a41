"""Sizing without an inventory: a synthetic one, planned and checked by the real engine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..catalog import Catalog, SwitchModel, catalog
from ..model.fabric import FabricSpec
from ..model.index import Index
from ..model.inventory import Inventory
from .checks import PlanReport, check_plan
from .design import Design, one_layer_leaves
from .errors import PlanError
from .generate import plan_fabric
from .merge import merge_plan
from .result import Plan
from .synthetic import Shape, synthetic_inventory


@dataclass(frozen=True)
class SizeRequest:
    nodes: int
    ports_per_node: int
    radix: int
    spine_radix: int | None = None
    core_radix: int | None = None
    rate: str | None = None
    oversubscription: Literal["1:1", "2:1", "3:1", "4:1"] = "1:1"
    su_size: int | None = None
    tiers: Literal["auto", 2, 3] = "auto"
    max_sus: int | None = None
    spines: int | None = None
    split: bool = False
    kind: Literal["fat-tree", "rail-optimized"] = "rail-optimized"
    leaves_per_rail: int | None = None
    planes: Literal["rail"] | int | None = None  # rails per plane


@dataclass(frozen=True)
class Planned:
    """A synthetic inventory with its plan merged (and its Index), the plan and its checks."""

    inv: Inventory
    plan: Plan
    report: PlanReport
    index: Index
    notes: tuple[str, ...] = ()  # what the sizing decided beyond the request (rail planes not needed)

    @property
    def design(self) -> Design:
        return self.plan.design


def model_for(cat: Catalog, radix: int, rate: str | None) -> tuple[Catalog, str]:
    """A catalog switch model with `radix` ports, else a hypothetical one (at `rate`, default NDR)."""
    found = sorted(name for name, m in cat.switches.items() if m.ports == radix)
    if found:
        return cat, found[0]
    name = f"generic-{radix}"
    model = SwitchModel(family="generic", ports=radix, rate=rate or "NDR", split=None, power_w=750.0, ru=1,
                        device_id=0, source="hypothetical switch of the requested radix, for sizing only")
    return cat.model_copy(update={"switches": {**cat.switches, name: model}}), name


def plan_synthetic(shape: Shape, spec: FabricSpec, cat: Catalog, *, as_declared: bool = False) -> Planned:
    """A design from scratch for `shape`. Rail planes asked for are planned only when they are needed:
    once the leaves the fabric is sized for outnumber a spine's ports (design.one_layer_leaves); below
    that one set of spines serves every leaf (one unit of 64 nodes x 8 rails on 64-port switches: 16
    leaves under 8 spines, not 8 planes of 2 spines), and a note says so. `as_declared`: the planes as
    asked, as an inventory that declares them gets them (its planes are its subnets)."""
    inv = synthetic_inventory(shape, spec, cat)
    plan = plan_fabric(inv, Index(inv, cat), cat)
    notes: tuple[str, ...] = ()
    d = plan.design
    leaves = one_layer_leaves(d) if d.rails_per_plane and not as_declared else None
    if leaves is not None:
        notes = (f"rail planes not needed: the {leaves} leaves fit one layer of {d.spine.ports}-port spines, "
                 f"which serves every leaf (planes only past {d.spine.ports} leaves); one fabric",)
        spec = spec.model_copy(update={"planes": None})
        inv = synthetic_inventory(shape, spec, cat)
        plan = plan_fabric(inv, Index(inv, cat), cat)
    merged = merge_plan(inv, plan).inv
    index = Index(merged, cat)
    return Planned(merged, plan, check_plan(index, merged.fabric), index, notes)


def size(req: SizeRequest, cat: Catalog | None = None, *, as_declared: bool = False) -> Planned:
    """The fabric `req` asks for, planned by the real generator (rail planes only where needed, unless
    `as_declared`: plan_synthetic)."""
    if req.nodes < 1 or req.ports_per_node < 1:
        raise PlanError("--nodes and --ports-per-node must be at least 1")
    cat = cat or catalog()
    cat, leaf = model_for(cat, req.radix, req.rate)
    cat, spine = model_for(cat, req.spine_radix or req.radix, cat.switches[leaf].rate)
    cat, core = model_for(cat, req.core_radix or req.spine_radix or req.radix, cat.switches[spine].rate)
    info = cat.switches[leaf]
    rate = req.rate or (info.split.rate if req.split and info.split else info.rate)
    if rate not in cat.rates:
        raise PlanError(f"--rate: unknown rate {rate!r}", [f"--rate {r}" for r in cat.rates])
    spec = FabricSpec(kind=req.kind, tiers=req.tiers, rate=rate, leaf_model=leaf, spine_model=spine,
                      core_model=core, split=req.split, oversubscription=req.oversubscription,
                      su_size=req.su_size, max_sus=req.max_sus, spines=req.spines,
                      leaves_per_rail=req.leaves_per_rail, planes=req.planes)
    return plan_synthetic(Shape(nodes=req.nodes, ports_per_node=req.ports_per_node, rate=rate), spec, cat,
                          as_declared=as_declared)


def size_dict(p: Planned) -> dict[str, Any]:
    d, plan, report = p.design, p.plan, p.report
    return {
        "tiers": d.tiers,
        "switches": plan.switch_counts(),
        "cables": plan.cable_counts(),
        "oversubscription": d.oversubscription,
        "oversubscription_achieved": report.oversubscription,
        "bisection_gbps": report.bisection_gbps,
        "bisection_across_rails_gbps": report.bisection_across_planes_gbps,
        "max_switch_hops": report.max_switch_hops,
        "models": {"leaf": d.leaf.model, "spine": d.spine.model, "core": d.core.model if d.core else None},
        "rate": d.rate,
        "su_size": d.su_size,
        "scalable_units": d.sus,
        "rails": d.rails,
        "leaves_per_rail": d.leaves_per_rail,
        "planes": d.planes,
        "rails_per_plane": d.rails_per_plane or d.rails,
        "leaf_ports": {"down": d.leaf_down, "up": d.uplinks},
        "spines_per_pod": d.spines_per_pod,
        "pods": d.pods,
        "links_leaf_spine": d.leaf_spine_links,
        "cores_per_plane": d.cores_per_plane,
        "links_spine_core": d.spine_core_links,
        "media": plan.media_counts(),
        "trunks": len(plan.trunks),
        "links_on_trunks": plan.links_on_trunks,
        "notes": list(p.notes),
    }
