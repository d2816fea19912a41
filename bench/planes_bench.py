"""Rail planes beside three tiers (bench/run.py --only planes): a 1,024-node, 8-rail NDR fabric on
64-port switches planned and exported as rail planes (`planes: rail`, a two-tier Clos per rail)
and as one three-tier fabric: switches, cables, trunks, transceivers, plan time, and the time and
size of every fabric export (cabling work order and labels, BOM, OpenSM files — one instance per
plane for rail planes — Slurm topology, ibsim net file, diagram source)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from timing import best_of

if TYPE_CHECKING:
    from clusterforge.model import Inventory
    from clusterforge.model.index import Index
    from clusterforge.plan import Plan
    from clusterforge.plan.bom import Bom

NODES = 1024




def bench_planes(tmp: Path) -> list[dict[str, object]]:
    from clusterforge.catalog import catalog
    from clusterforge.model import FabricSpec
    from clusterforge.model.index import Index
    from clusterforge.model.services import OpenSm, SmNode
    from clusterforge.plan import check_plan, plan_fabric
    from clusterforge.plan.bom import bill_of_materials
    from clusterforge.plan.merge import merge_plan
    from clusterforge.plan.prices import EXAMPLE_PRICES
    from clusterforge.plan.synthetic import Shape, synthetic_inventory
    from clusterforge.render import core as render_core
    from clusterforge.render.core import banner
    from clusterforge.render.env import environment
    from clusterforge.render.fabric import FabricView
    from clusterforge.util.gcpause import gc_paused

    builders = [b for b in render_core.BUILDERS if b.__name__ not in ("host_files", "lustre_files")]
    rows: list[dict[str, object]] = []
    for label, rail_planes in (("rail planes", True), ("three tiers", False)):
        spec = FabricSpec(rate="NDR", leaf_model="QM9700", spine_model="QM9700", rails=8, su_size=32,
                          planes="rail" if rail_planes else None)
        inv = synthetic_inventory(Shape(nodes=NODES, ports_per_node=8, gpu_model="H100-SXM"), spec, catalog())
        # two SM nodes in different units (a port on every rail, so in every plane; HA partners share no
        # leaf): the OpenSM files are part of the exports
        inv = inv.model_copy(update={"opensm": OpenSm(sm_nodes=[SmNode(node=inv.nodes[0].name, priority=15),
                                                                SmNode(node=inv.nodes[32].name, priority=14)])})

        def exports(inv: Inventory = inv) -> tuple[Plan, Index, Bom, int, int]:
            with gc_paused():
                plan = plan_fabric(inv)
                index = Index(merge_plan(inv, plan).inv)
                bom = bill_of_materials(index, EXAMPLE_PRICES)
                fab = FabricView(index)
                jinja = environment()
                lines = banner("bench")
                files = size = 0
                for build in builders:
                    for fs in build(fab):
                        size += len(jinja.get_template(fs.template).render(
                            {**fs.context, "banner": lines, "environment": "bench"}))
                        files += 1
                return plan, index, bom, files, size

        def plan_only(inv: Inventory = inv) -> Plan:
            return plan_fabric(inv)

        plan_s = best_of(plan_only, 3)
        total_s = best_of(exports, 2)
        plan, index, bom, files, size = exports()
        report = check_plan(index)
        rows.append({
            "bench": f"plan+exports {label}", "nodes": NODES, "rails": 8,
            "planes": report.planes, "tiers": plan.design.tiers,
            "switches": len(plan.switches), "cables": len(plan.cables),
            "trunks": len(plan.trunks),
            "transceivers": sum(line.quantity for line in bom.lines
                                if line.category == "transceiver"),
            "fabric_cost": round(sum(line.total or 0.0 for line in bom.lines
                                     if line.category != "gpu")),
            "bisection_gbps": report.bisection_gbps, "bisection_across_planes_gbps":
                report.bisection_across_planes_gbps, "hops": report.max_switch_hops,
            "export_files": files, "export_mb": round(size / 1e6, 2),
            "plan_s": round(plan_s, 3), "plan+exports_s": round(total_s, 3),
        })
    return rows
