"""Units wider than a leaf (leaves per rail) and rail planes: sizes worked out by hand.

Every case: 8 rails (8 single-port NDR HCAs per node), 64-port QM9700 leaves, spines and cores, 1:1.

Rules (docs/planner.md): a leaf keeps leaf_down = su_size / leaves_per_rail node ports and as many
up ports; 2 tiers: S spines, the fewest that divide the 32 uplinks (at least 2) with
leaves x 32/S <= 64; 3 tiers: 32 spines per pod (one per uplink), 32 / leaves-per-unit units per
pod, C cores per plane, the fewest dividing the 32 spine up ports with pods x 32/C <= 64, 32 planes;
rail planes: a 2-tier Clos per rail on the unit's leaves of that rail.

unit of 32 (1 leaf per rail, 8 leaves per unit), n units, one fabric:
  2 tiers while 8n <= 64 (n <= 8): S >= 4n -> n=1: 4, 2: 8, 3-4: 16, 5-8: 32
  3 tiers, n = 9..16: 4 units per pod, pods = ceil(n/4) -> 3 or 4, C = 2 -> 64 cores;
  spine-core links = pods x 32 spines x 32 up ports
unit of 64 (2 leaves per rail of 32 down + 32 up, 16 leaves per unit):
  2 tiers while 16n <= 64 (n <= 4): S >= 8n -> n=1: 8, 2: 16, 3-4: 32
  3 tiers, n = 5..16: 2 units per pod, pods = ceil(n/2), C = 2 for 3-4 pods, 4 for 5-8 (64 or 128 cores)
rail planes, unit of 32: a plane has n leaves, S >= n/2 -> n=1-4: 2, 5-8: 4, 9-16: 8 spines per plane
rail planes, unit of 64: a plane has 2n leaves, S >= n -> n=1-2: 2, 3-4: 4, 5-8: 8, 9-16: 16
node-leaf cables = nodes x 8 = leaf-spine cables (1:1) in every case.
"""

from __future__ import annotations

import math

import pytest

from clusterforge.catalog import catalog
from clusterforge.model import FabricSpec
from clusterforge.plan import PlanError, resolve
from clusterforge.plan.sizing import SizeRequest, size, size_dict

CAT = catalog()
UNITS = range(1, 17)

# n -> spines in 2 tiers (one fabric), by hand above
TWO_TIER_32 = {1: 4, 2: 8, 3: 16, 4: 16, 5: 32, 6: 32, 7: 32, 8: 32}
TWO_TIER_64 = {1: 8, 2: 16, 3: 32, 4: 32}
PLANE_SPINES_32 = {n: 2 if n <= 4 else 4 if n <= 8 else 8 for n in UNITS}
PLANE_SPINES_64 = {n: 2 if n <= 2 else 4 if n <= 4 else 8 if n <= 8 else 16 for n in UNITS}


def spec(**kw: object) -> FabricSpec:
    return FabricSpec(rate="NDR", leaf_model="QM9700", **kw)  # type: ignore[arg-type,unused-ignore]


def expected(unit: int, n: int, planes: bool) -> tuple[int, int, int, int]:
    """(leaves, spines, cores, switch-switch cables) by the rules in the module doc."""
    per_rail = unit // 32
    leaves = n * 8 * per_rail
    if planes:
        s = (PLANE_SPINES_32 if unit == 32 else PLANE_SPINES_64)[n]
        return leaves, 8 * s, 0, leaves * 32
    two = TWO_TIER_32 if unit == 32 else TWO_TIER_64
    if n in two:
        return leaves, two[n], 0, leaves * 32
    pods = math.ceil(n / (4 // per_rail))
    cores_per_plane = 2 if pods <= 4 else 4
    return leaves, pods * 32, 32 * cores_per_plane, leaves * 32 + pods * 32 * 32


@pytest.mark.parametrize("planes", [False, True])
@pytest.mark.parametrize("unit", [32, 64])
@pytest.mark.parametrize("n", list(UNITS))
def test_design_counts_by_hand(unit: int, n: int, planes: bool) -> None:
    d = resolve(spec(su_size=unit, planes="rail" if planes else None), CAT, nodes=unit * n, rails=8)
    leaves, spines, cores, _ = expected(unit, n, planes)
    assert d.leaves_per_rail == unit // 32
    assert (d.leaf_down, d.uplinks) == (32, 32)
    assert (d.leaves, d.spines, d.cores) == (leaves, spines, cores)
    assert d.tiers == (2 if planes or cores == 0 else 3)
    assert d.planes == (8 if planes else 1)


@pytest.mark.parametrize(("unit", "n", "planes"), [
    (32, 1, False), (64, 1, False), (64, 2, False), (64, 5, False), (32, 9, True), (64, 5, True), (64, 16, True),
])
def test_generated_plans_match_the_hand_counts(unit: int, n: int, planes: bool) -> None:
    p = size(SizeRequest(nodes=unit * n, ports_per_node=8, radix=64, su_size=unit,
                         planes="rail" if planes else None))
    leaves, spines, cores, upper = expected(unit, n, planes)
    assert p.plan.switch_counts() == {"leaf": leaves, "spine": spines, "core": cores}
    counts = p.plan.cable_counts()
    assert counts["node_leaf"] == unit * n * 8
    assert counts["leaf_spine"] + counts["spine_core"] == upper
    assert p.report.ok, p.report.findings
    assert p.report.oversubscription == "1:1"


def test_the_issue_command_two_leaves_per_rail() -> None:
    # plan size --nodes 64 --ports-per-node 8 --radix 64 --su-size 64: one unit of 64, 16 leaves
    # (32 down + 32 up), 512 uplinks over 8 spines (16 leaves x 4 links = 64 ports each): 24 switches,
    # 512 + 512 cables, bisection 64 x 8 x 400 / 2 Gb/s
    p = size(SizeRequest(nodes=64, ports_per_node=8, radix=64, su_size=64))
    d = p.design
    assert (d.su_size, d.leaves_per_rail, d.compute_sus) == (64, 2, 1)
    names = sorted(s.name for s in p.plan.switches if s.role == "leaf")
    assert names[:3] == ["leaf-su01-r0-0", "leaf-su01-r0-1", "leaf-su01-r1-0"]
    by_id = {c.id: c for c in p.plan.cables}
    # node k of the unit: rail leaf k // 32, port k % 32 + 1
    assert by_id["leaf-su01-r3-1.1"].a.device == "node00033"
    assert by_id["leaf-su01-r3-0.32"].a.device == "node00032"
    assert by_id["leaf-su01-r3-1.33"].b.device == "spine01"  # first up port after 32 down
    assert p.plan.switch_counts() == {"leaf": 16, "spine": 8, "core": 0}
    assert p.report.bisection_gbps == 64 * 8 * 400 / 2
    assert p.report.ok


def test_leaves_per_rail_given() -> None:
    d = resolve(spec(su_size=64, leaves_per_rail=4), CAT, nodes=128, rails=8)
    assert (d.leaf_down, d.uplinks, d.leaves) == (16, 16, 64)
    d = resolve(spec(leaves_per_rail=2), CAT, nodes=128, rails=8)  # default unit: two default leaves
    assert (d.su_size, d.leaf_down) == (64, 32)
    with pytest.raises(PlanError) as info:
        resolve(spec(su_size=64, leaves_per_rail=3), CAT, nodes=128, rails=8)
    assert "does not split evenly over leaves_per_rail 3" in info.value.message


def test_rail_planes_the_issue_figures() -> None:
    # 512 nodes x 8 rails, 64-port: rail planes 128 leaves + 8 x 8 spines = 192 switches, 4,096 + 4,096
    # cables; three tiers 128 + 128 + 64 = 320 switches, 3 x 4,096 = 12,288 cables
    planes = size(SizeRequest(nodes=512, ports_per_node=8, radix=64, planes="rail"))
    three = size(SizeRequest(nodes=512, ports_per_node=8, radix=64))
    assert sum(planes.plan.switch_counts().values()) == 192
    assert sum(planes.plan.cable_counts().values()) == 8192
    assert sum(three.plan.switch_counts().values()) == 320
    assert sum(three.plan.cable_counts().values()) == 12288
    assert planes.report.planes == 8 and three.report.planes == 1
    assert planes.report.bisection_gbps == three.report.bisection_gbps == 512 * 8 * 400 / 2
    assert planes.report.bisection_across_planes_gbps == 0
    assert three.report.bisection_across_planes_gbps == three.report.bisection_gbps
    assert planes.report.max_switch_hops == 3 and three.report.max_switch_hops == 5
    assert planes.report.ok, planes.report.findings


def test_rail_plane_errors() -> None:
    with pytest.raises(PlanError) as info:
        resolve(spec(planes=3), CAT, nodes=64, rails=8)
    assert "3 rails per plane do not divide the 8 rails" in info.value.message
    with pytest.raises(PlanError) as info:
        resolve(spec(planes="rail", tiers=3), CAT, nodes=64, rails=8)
    assert "two-tier" in info.value.message
    with pytest.raises(PlanError) as info:
        resolve(spec(planes="rail", kind="fat-tree"), CAT, nodes=64, rails=8)
    assert "rail-optimized" in info.value.message
    with pytest.raises(PlanError) as info:  # 65 units of 32: 65 leaves in a plane of 64-port spines
        resolve(spec(planes="rail"), CAT, nodes=65 * 32, rails=8)
    assert "one plane of 64-port QM9700 spines connects at most 64 leaves" in info.value.message
    # two rails per plane: 4 planes of 2 x 16 = 32 leaves at 512 nodes
    d = resolve(spec(planes=2), CAT, nodes=512, rails=8)
    assert (d.planes, d.plane_unit_leaves, d.spines_per_pod) == (4, 2, 16)


@pytest.mark.parametrize(("unit", "n"), [(64, 1), (64, 4), (32, 1), (32, 8)])
def test_rail_planes_asked_at_one_spine_layer_size_one_fabric(unit: int, n: int) -> None:
    # issue #21: planes are needed only once the leaves outnumber a spine's ports (64): 8n leaves of units of
    # 32, 16n of units of 64, up to 64 leaves one set of spines serves every leaf. One unit of 64: 16 leaves
    # (2 per rail), 512 uplinks over 8 spines (16 leaves x 4 links = 64 ports each), as the one-fabric design
    p = size(SizeRequest(nodes=unit * n, ports_per_node=8, radix=64, su_size=unit, planes="rail"))
    one = size(SizeRequest(nodes=unit * n, ports_per_node=8, radix=64, su_size=unit))
    leaves, spines, _, upper = expected(unit, n, planes=False)
    assert leaves <= 64
    assert p.plan.switch_counts() == one.plan.switch_counts() == {"leaf": leaves, "spine": spines, "core": 0}
    assert p.design.planes == 1 and p.report.planes == 1 and p.design.tiers == 2
    assert p.plan.cable_counts()["leaf_spine"] == upper
    assert p.report.bisection_across_planes_gbps == p.report.bisection_gbps
    assert any(f"{leaves} leaves" in note and "64-port spines" in note for note in p.notes), p.notes
    assert size_dict(p)["notes"] == list(p.notes)
    if (unit, n) == (64, 1):
        assert spines == 8


@pytest.mark.parametrize(("unit", "n"), [(64, 5), (32, 9), (32, 16)])
def test_rail_planes_asked_past_one_spine_layer_are_planned(unit: int, n: int) -> None:
    p = size(SizeRequest(nodes=unit * n, ports_per_node=8, radix=64, su_size=unit, planes="rail"))
    leaves, spines, _, _ = expected(unit, n, planes=True)
    assert leaves > 64 and p.notes == ()
    assert p.design.planes == 8 and p.report.planes == 8
    assert p.plan.switch_counts() == {"leaf": leaves, "spine": spines, "core": 0}
    assert p.report.bisection_across_planes_gbps == 0


def test_rail_planes_are_needed_for_the_leaves_the_spines_are_sized_for() -> None:
    # one unit of 64 now, sized for 5 (max_sus): 80 leaves later, so the planes are built from the start
    p = size(SizeRequest(nodes=64, ports_per_node=8, radix=64, su_size=64, planes="rail", max_sus=5))
    assert p.design.planes == 8 and p.notes == ()
