"""The generator on the prod inventory, a vendor reference design, a 3-tier fabric, and its rules."""

from __future__ import annotations

from collections import Counter

import pytest
from _plan_util import links_between, prod_without_fabric, synth, with_plan

from clusterforge.check import run_checks
from clusterforge.model.index import Index
from clusterforge.plan import PlanError, check_plan, plan_fabric


def test_prod_counts_derived_by_hand() -> None:
    # 256 compute nodes x 2 HDR ports (mlx5_0, mlx5_1) = 512 endpoints, 2 rails.
    # QM8700: 40 HDR ports; non-blocking -> 20 down + 20 up per leaf, su_size 20.
    # 256 / 20 = 12.8 -> 13 scalable units (the last has 16 nodes); 13 x 2 rails = 26 leaves.
    # Spines: fewest S dividing the 20 uplinks with 26 leaves x (20 / S) <= 40 ports:
    #   S = 2, 4, 5, 10 give 260, 130, 104, 52 ports; S = 20 gives 26 -> 20 spines, 1 link each.
    # Cables: 512 node-leaf + 26 x 20 leaf-spine = 520 -> 1032. Switches: 26 + 20 = 46.
    inv = prod_without_fabric(rate="HDR", leaf_model="QM8700", roles=["compute"])
    plan = plan_fabric(inv)
    d = plan.design
    assert (d.su_size, d.sus, d.rails, d.uplinks, d.tiers) == (20, 13, 2, 20, 2)
    assert plan.switch_counts() == {"leaf": 26, "spine": 20, "core": 0}
    assert plan.cable_counts() == {"node_leaf": 512, "leaf_spine": 520, "spine_core": 0}
    assert set(links_between(plan).values()) == {1}
    report = check_plan(Index(with_plan(inv, plan)))
    assert report.ok, report.findings
    assert report.oversubscription == "1:1"
    assert report.bisection_gbps == 512 * 200 / 2  # 51,200 Gb/s: half the node bandwidth
    assert report.max_switch_hops == 3


def test_prod_with_storage_and_subnet_managers() -> None:
    # + 2 SM + 20 Lustre nodes (1 port each) = 278 nodes -> 14 SUs -> 28 leaves; 20 spines hold them
    # (28 ports each); cables 512 + 22 + 28 x 20 = 1094, as in the hand-made prod inventory.
    plan = plan_fabric(prod_without_fabric(rate="HDR", leaf_model="QM8700"))
    assert plan.switch_counts() == {"leaf": 28, "spine": 20, "core": 0}
    assert sum(plan.cable_counts().values()) == 1094


def test_vendor_reference_scalable_units() -> None:
    # DGX SuperPOD-style SU: 32 nodes x 8 rails on QM9700 (64 x NDR): 8 leaves per SU, 32 down / 32 up.
    # 4 SUs = 128 nodes = 1024 endpoints -> 32 leaves x 32 uplinks = 1024 spine ports / 64 = 16 spines,
    # 32 / 16 = 2 links from every leaf to every spine; every spine port used (32 leaves x 2 = 64).
    inv = synth(128, 8, su_size=32)
    plan = plan_fabric(inv)
    assert plan.switch_counts() == {"leaf": 32, "spine": 16, "core": 0}
    assert plan.cable_counts() == {"node_leaf": 1024, "leaf_spine": 1024, "spine_core": 0}
    assert set(links_between(plan).values()) == {2}
    report = check_plan(Index(with_plan(inv, plan)))
    assert report.ok
    assert all(report.free_ports[f"spine{s:02d}"] == 0 for s in range(1, 17))
    assert report.bisection_gbps == 1024 * 400 / 2


def test_three_tier_2048_nodes() -> None:
    # 2,048 nodes x 8 rails = 16,384 endpoints on 64-port switches: 512 leaves, 16 pods of 4 SUs with
    # 32 spines each (512), 32 core planes of 8 cores (256) with 4 links from each spine.
    inv = synth(2048, 8, su_size=32)
    plan = plan_fabric(inv)
    assert plan.design.tiers == 3
    assert plan.switch_counts() == {"leaf": 512, "spine": 512, "core": 256}
    assert plan.cable_counts() == {"node_leaf": 16384, "leaf_spine": 16384, "spine_core": 16384}
    pairs = links_between(plan)
    assert {n for (lo, _), n in pairs.items() if lo.startswith("leaf")} == {1}
    assert {n for (lo, _), n in pairs.items() if lo.startswith("spine")} == {4}
    report = check_plan(Index(with_plan(inv, plan)))
    assert report.ok, report.findings[:3]
    assert report.tiers == 3 and report.max_switch_hops == 5
    assert report.bisection_gbps == 16384 * 400 / 2
    assert max(ref.port for c in plan.cables for ref in (c.a, c.b) if ref.hca is None) == 64


def test_generated_plan_passes_the_inventory_checks() -> None:
    inv = synth(300, 4, su_size=32, rate="NDR")
    assert run_checks(Index(with_plan(inv))) == []


def test_rail_k_of_every_node_goes_to_its_units_rail_k_leaf() -> None:
    plan = plan_fabric(synth(70, 4, su_size=32))
    for c in plan.cables:
        if c.a.hca is None:
            continue
        node = int(c.a.device[4:]) - 1
        rail = int(c.a.hca.split("_")[1])
        assert c.b.device == f"leaf-su{node // 32 + 1:02d}-r{rail}"
        assert c.b.port == node % 32 + 1
        assert c.id == f"{c.b.device}.{c.b.port}"


def test_port_numbering_of_leaf_and_spine() -> None:
    plan = plan_fabric(synth(128, 8, su_size=32))
    by_id = {c.id: c for c in plan.cables}
    # leaf-su02-r3 is leaf position 1 x 8 + 3 = 11; its link j to spine s leaves port 32 + 2s + j + 1
    c = by_id["leaf-su02-r3.38"]  # s = 2, j = 1
    assert (str(c.a), str(c.b)) == ("leaf-su02-r3/38", "spine03/24")  # spine port 11 x 2 + 1 + 1


def test_switch_fields_and_placement() -> None:
    inv = prod_without_fabric(rate="HDR", leaf_model="QM8700", roles=["compute"])
    plan = plan_fabric(inv)
    leaves = [s for s in plan.switches if s.role == "leaf"]
    assert {(s.name, s.rack, s.u, s.group, s.rail) for s in leaves if s.group == 0} == {
        ("leaf-su01-r0", "prod-su01-net", 1, 0, 0), ("leaf-su01-r1", "prod-su01-net", 2, 0, 1)}
    assert all(s.rack == f"prod-su{s.group + 1:02d}-net" for s in leaves if s.group is not None)
    # spines fill the racks of row-b in order; prod-core01 holds 14 units of nodes (sm01, sm02, lus01-06),
    # so switches may take (42 - 14) / 2 = 14 of its units; the other 6 spines go to prod-core02.
    spines = [(s.rack, s.u) for s in plan.switches if s.role == "spine"]
    assert spines == [("prod-core01", u) for u in range(1, 15)] + [("prod-core02", u) for u in range(1, 7)]


def test_media_dac_in_rack_aoc_in_row_fiber_on_trunks_across_rows() -> None:
    inv = synth(64, 2, su_size=32, nodes_per_rack=4)
    plan = plan_fabric(inv)
    racks = {r.name: r for r in inv.racks}
    where = {n.name: n.rack for n in inv.nodes} | {s.name: s.rack for s in plan.switches}
    for c in plan.cables:
        ra, rb = racks[where[c.a.device]], racks[where[c.b.device]]
        if ra.row != rb.row:
            assert c.media == "fiber" and c.trunk is not None
        elif ra.name != rb.name:
            assert c.media == "AOC" and c.trunk is None
    assert Counter(c.media for c in plan.cables) == {"AOC": 128, "fiber": 128}


def test_same_rack_links_use_dac_where_it_reaches() -> None:
    inv = synth(8, 1, su_size=8, rate="EDR", leaf_model="QM8700", nodes_per_rack=8, node_u=2)
    # leaves sit in su01-net; put the nodes in that rack too: DAC reaches 5 m at EDR
    moved = inv.model_copy(update={"nodes": [n.model_copy(update={"rack": "su01-net", "u": 10 + 2 * i})
                                             for i, n in enumerate(inv.nodes)]})
    plan = plan_fabric(moved)
    node_links = [c for c, t in zip(plan.cables, plan.tiers, strict=True) if t == 0]
    assert {c.media for c in node_links} == {"DAC"}
    # 2 m allowance + 0.0445 m per unit between node (U10-U24) and leaf (U1), rounded up to orderable sizes
    assert {c.length_m for c in node_links} == {2.5, 3, 4}


def test_fat_tree_kind_packs_node_ports_in_order() -> None:
    plan = plan_fabric(synth(32, 2, su_size=32, kind="fat-tree"))
    first = [c for c in plan.cables if c.a.device == "node00001"]
    assert [(str(c.a), str(c.b)) for c in first] == [("node00001/mlx5_0/1", "leaf-su01-0/1"),
                                                      ("node00001/mlx5_1/1", "leaf-su01-0/2")]
    assert all(s.rail is None for s in plan.switches)


def test_split_ports_double_the_endpoints_per_leaf() -> None:
    plan = plan_fabric(synth(128, 8, split=True, rate="NDR200"))
    d = plan.design
    assert (d.su_size, d.uplinks, d.sus) == (64, 64, 2)
    assert plan.switch_counts()["leaf"] == 16 and all(s.split for s in plan.switches)


@pytest.mark.parametrize(("ratio", "down", "up"), [("2:1", 40, 20), ("3:1", 48, 16), ("4:1", 48, 12)])
def test_oversubscription_is_leaf_down_over_up(ratio: str, down: int, up: int) -> None:
    inv = synth(down * 3, 2, oversubscription=ratio)
    plan = plan_fabric(inv)
    assert (plan.design.su_size, plan.design.uplinks) == (down, up)
    report = check_plan(Index(with_plan(inv, plan)))
    assert report.oversubscription == ratio and report.ok


def test_deterministic() -> None:
    inv = synth(100, 4, su_size=32)
    assert plan_fabric(inv) == plan_fabric(inv)


def test_no_switch_row_is_an_error_with_the_rows_to_pick() -> None:
    inv = prod_without_fabric(rate="HDR", leaf_model="QM8700", switch_row=None)
    with pytest.raises(PlanError) as info:
        plan_fabric(inv)
    assert "fabric.switch_row is not set" in info.value.message
    assert info.value.suggestions == ("switch_row: row-a", "switch_row: row-b")


def test_no_fabric_nodes() -> None:
    with pytest.raises(PlanError, match=r"no node with an InfiniBand port has a role in fabric\.roles"):
        plan_fabric(prod_without_fabric(roles=["login"]))


def test_node_with_more_ports_than_rails() -> None:
    with pytest.raises(PlanError, match=r"node node00001: mlx5_2/1 is on rail 2, but the fabric has 2 rails"):
        plan_fabric(synth(8, 4, rails=2, su_size=8))


def test_hca_rate_that_cannot_link_to_the_leaf() -> None:
    inv = synth(8, 1, su_size=8, rate="EDR", leaf_model="QM9700")
    with pytest.raises(PlanError, match="mlx5_0/1 runs EDR, but the ports of QM9700 leaves run NDR"):
        plan_fabric(inv)


def test_two_ports_on_one_rail() -> None:
    inv = synth(8, 2, su_size=8)
    prof = inv.profiles[0]
    hcas = [h.model_copy(update={"rail": 0}) for h in prof.hcas]
    inv = inv.model_copy(update={"profiles": [prof.model_copy(update={"hcas": hcas})]})
    with pytest.raises(PlanError, match="node node00001: mlx5_0/1 and mlx5_1/1 are both on rail 0"):
        plan_fabric(inv)


def test_node_in_an_undeclared_rack() -> None:
    inv = synth(8, 1, su_size=8)
    nodes = [*inv.nodes[:-1], inv.nodes[-1].model_copy(update={"rack": "nowhere"})]
    with pytest.raises(PlanError, match="node node00008: rack 'nowhere' is not declared"):
        plan_fabric(inv.model_copy(update={"nodes": nodes}))


def test_generated_cables_are_valid_models() -> None:
    # the generator builds cables without re-validation: each must survive validation unchanged
    from clusterforge.model import Cable

    plan = plan_fabric(synth(96, 4, su_size=16))
    assert plan.cables
    for cable in plan.cables:
        assert Cable.model_validate(cable.model_dump()) == cable
