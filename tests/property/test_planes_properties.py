"""Rail planes and units wider than a leaf, over random floors and edits.

A synthetic floor with random rails, rail planes (none, one per rail, or a divisor of the rails
per plane), unit size and leaves per rail is planned from scratch and frozen; then nodes are added
at the end or a block is retired from the middle, and it is planned again against the freeze.
Asserted: no switch serves two planes (a leaf's nodes are on the rails of one plane, a spine's
leaves are all of one plane); every HCA port of rail r lands on a leaf of plane(r); a unit's node
takes port k % leaf_down + 1 of leaf k // leaf_down of its rail; every surviving node keeps its
cables; the plan checks pass; re-planning the result changes nothing.
"""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from clusterforge.catalog import catalog
from clusterforge.model import FabricSpec, Inventory
from clusterforge.model.index import Index
from clusterforge.plan import Plan, PlanError, check_plan, plan_fabric
from clusterforge.plan.changes import changes
from clusterforge.plan.endpoints import rail_ports
from clusterforge.plan.frozen import Frozen
from clusterforge.plan.synthetic import Shape, synthetic_inventory

CAT = catalog()
FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _frozen(plan: Plan) -> Frozen:
    return Frozen.of_items(list(plan.switches), list(plan.cables), list(plan.patch_panels), list(plan.trunks))


def _merged(inv: Inventory, plan: Plan) -> Inventory:
    return inv.model_copy(update={"switches": list(plan.switches), "cables": list(plan.cables),
                                  "patch_panels": list(plan.patch_panels), "trunks": list(plan.trunks)})


@st.composite
def floors(draw: st.DrawFn) -> tuple[Inventory, Inventory, str]:
    rails = draw(st.sampled_from([1, 2, 4, 8]))
    planes = draw(st.sampled_from([None, "rail", *[d for d in (1, 2, 4) if rails % d == 0]]))
    per_rail = draw(st.sampled_from([None, 1, 2, 3]))
    leaf_down = draw(st.sampled_from([4, 8, 16]))  # QM8700 (40 ports): up to 20 down at 1:1
    su = leaf_down * (per_rail or draw(st.sampled_from([1, 2])))
    spec = FabricSpec(rate="HDR", leaf_model="QM8700", su_size=su, leaves_per_rail=per_rail, planes=planes,
                      max_sus=draw(st.sampled_from([None, 6])))
    total = draw(st.integers(min_value=1, max_value=4 * su))
    extra = draw(st.integers(min_value=0, max_value=su))
    try:
        full = synthetic_inventory(Shape(nodes=total + extra, ports_per_node=rails, nodes_per_rack=4, node_u=4),
                                   spec, CAT)
    except PlanError:  # a design that does not exist (errors: tests/unit/plan/test_planes_sizes.py)
        assume(False)
        raise
    before = full.model_copy(update={"nodes": full.nodes[:total]})
    what = draw(st.sampled_from(["grow", "retire"]))
    if what == "grow":
        after = full
    else:
        start = draw(st.integers(min_value=0, max_value=total - 1))
        stop = draw(st.integers(min_value=start + 1, max_value=min(total, start + su)))
        nodes = full.nodes[:start] + full.nodes[stop:total]
        assume(nodes)
        after = full.model_copy(update={"nodes": nodes})
    return before, after, what


def _assert_planes(inv: Inventory, plan: Plan) -> None:
    d = plan.design
    index = Index(_merged(inv, plan), CAT)
    rail_of = {}
    for node in inv.nodes:
        for rail, ep in rail_ports(index.hardware[node.name]):
            rail_of[(node.name, ep.hca, ep.port)] = rail
    sw = {s.name: s for s in plan.switches}
    leaf_plane: dict[str, set[int]] = {}
    for c in plan.cables:
        if c.a.hca is not None:
            rail = rail_of[(c.a.device, c.a.hca, c.a.port)]
            leaf = sw[c.b.device]
            assert leaf.rail == rail, (c.id, rail)  # the rail's own leaf
            leaf_plane.setdefault(leaf.name, set()).add(d.plane_of(rail))
    for planes in leaf_plane.values():
        assert len(planes) == 1  # a leaf serves one plane
    spine_plane: dict[str, set[int]] = {}
    for c in plan.cables:
        if c.a.hca is None and sw[c.a.device].role == "leaf":
            leaf = sw[c.a.device]
            assert leaf.rail is not None
            spine_plane.setdefault(c.b.device, set()).add(d.plane_of(leaf.rail))
            if d.rails_per_plane:
                assert sw[c.b.device].group == d.plane_of(leaf.rail), c.id  # the spine's group is its plane
    for planes in spine_plane.values():
        assert len(planes) == 1  # a spine serves one plane: no switch serves two
    if d.rails_per_plane:
        assert {s.group for s in plan.switches if s.role == "spine"} <= set(range(d.planes))


@FAST
@given(floors())
def test_planes_stay_apart_and_replans_keep_the_nodes(case: tuple[Inventory, Inventory, str]) -> None:
    before, after, what = case
    try:
        old = plan_fabric(before)
        new = plan_fabric(after, frozen=_frozen(old))
    except PlanError:
        assume(False)
        raise
    for inv, plan in ((before, old), (after, new)):
        _assert_planes(inv, plan)
        report = check_plan(Index(_merged(inv, plan), CAT))
        assert report.ok, report.findings
        used = {plan.design.plane_of(s.rail) for s in plan.switches if s.role == "leaf" and s.rail is not None}
        assert report.planes == (len(used) if plan.design.rails_per_plane else 1)
        if plan.design.rails_per_plane:  # within a plane: leaf-spine-leaf at most
            assert report.max_switch_hops == (3 if len({s.name for s in plan.switches if s.role == "leaf"})
                                              > len(used) else 1)
    # from scratch: node k of a unit on port k % leaf_down + 1 of its rail's leaf k // leaf_down
    d = old.design
    if d.leaves_per_rail > 1:
        order = {n.name: i for i, n in enumerate(before.nodes)}
        for c in old.cables:
            if c.a.hca is not None:
                k = order[c.a.device] % d.su_size
                assert c.b.device.endswith(f"-{k // d.leaf_down}") and c.b.port == k % d.leaf_down + 1
    # every surviving node keeps its cables
    survivors = {n.name for n in after.nodes}
    old_host = {ref.key: c for c in old.cables for ref in (c.a, c.b) if ref.hca is not None}
    new_host = {ref.key: c for c in new.cables for ref in (c.a, c.b) if ref.hca is not None}
    for key, c in old_host.items():
        if key[0] in survivors:
            assert new_host.get(key) == c, (what, key)
    again = plan_fabric(after, frozen=_frozen(new))
    assert changes(_frozen(new), again).none
    assert again.cables == new.cables and again.switches == new.switches
