"""An HA pair inside one unit: the partner moved to another unit swaps with one node there instead of
pushing every later node one slot along (found with the rail-plane bench: two SM nodes 1 and 2 of
1,024 moved 65 of 96 nodes here before)."""

from __future__ import annotations

from clusterforge.catalog import catalog
from clusterforge.model import FabricSpec
from clusterforge.model.services import OpenSm, SmNode
from clusterforge.plan import plan_fabric
from clusterforge.plan.synthetic import Shape, synthetic_inventory


def test_a_partner_moved_out_of_its_unit_displaces_one_node() -> None:
    spec = FabricSpec(rate="NDR", leaf_model="QM9700", rails=8, su_size=32, planes="rail")
    inv = synthetic_inventory(Shape(nodes=96, ports_per_node=8), spec, catalog())
    inv = inv.model_copy(update={"opensm": OpenSm(sm_nodes=[SmNode(node="node00001", priority=15),
                                                            SmNode(node="node00002", priority=14)])})
    plan = plan_fabric(inv)
    order = {n.name: i for i, n in enumerate(inv.nodes)}
    moved = set()
    leaves: dict[str, set[str]] = {}
    for c in plan.cables:
        if c.a.hca is not None:
            leaves.setdefault(c.a.device, set()).add(c.b.device)
            if c.a.hca == "mlx5_0":
                slot = (int(c.b.device[len("leaf-su"):len("leaf-su") + 2]) - 1, c.b.port - 1)
                if slot != divmod(order[c.a.device], 32):
                    moved.add((c.a.device, slot))
    # node00002 takes unit 2's first slot, whose node (node00033) takes the slot node00002 left
    assert moved == {("node00002", (1, 0)), ("node00033", (0, 1))}
    assert not leaves["node00001"] & leaves["node00002"]
    assert plan.design.compute_sus == 3
