"""Infrastructure leaves: subnet managers and storage servers on leaves of their own (fabric.infra_roles)."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from _plan_util import cable_key, prod_without_fabric, synth, with_plan
from pydantic import ValidationError

from clusterforge.check import run_checks
from clusterforge.model import FabricSpec, Inventory
from clusterforge.model.index import Index
from clusterforge.plan import PlanError, check_plan, plan_fabric
from clusterforge.plan.endpoints import Endpoint, FabricNode
from clusterforge.plan.generate import infra_spread

INFRA = ["subnet-manager", "storage"]


def prod_infra(**spec: object) -> Inventory:
    return prod_without_fabric(rate="HDR", leaf_model="QM8700", infra_roles=INFRA, **spec)


def host_leaves(inv: Inventory) -> dict[str, list[str]]:
    """Leaves each node is cabled to, in HCA port order."""
    plan = plan_fabric(inv)
    out: dict[str, list[str]] = defaultdict(list)
    for c in plan.cables:
        if c.a.hca is not None:
            out[c.a.device].append(c.b.device)
    return out


def test_prod_with_infrastructure_leaves_counts_by_hand() -> None:
    # 256 GPU nodes x 2 rails at su_size 20 -> 13 SUs -> 26 rail leaves. 2 SMs + 20 Lustre servers,
    # one port each = 22 ports -> ceil(22 / 20) = 2 infrastructure leaves (one unit position of 2 rails).
    # 14 unit positions x 2 = 28 leaves on the spines, as before; 20 spines; 534 + 28 x 20 = 1094 cables.
    inv = prod_infra()
    plan = plan_fabric(inv)
    d = plan.design
    assert (d.infra_leaves, d.infra_sus, d.compute_sus, d.sus) == (2, 1, 13, 14)
    assert plan.switch_counts() == {"leaf": 28, "spine": 20, "core": 0}
    assert plan.cable_counts() == {"node_leaf": 534, "leaf_spine": 560, "spine_core": 0}
    infra_leaves = {s.name: s for s in plan.switches if s.name.startswith("leaf-infra-")}
    assert sorted(infra_leaves) == ["leaf-infra-01", "leaf-infra-02"]
    assert all(s.rail is None and s.group is None and s.role == "leaf" for s in infra_leaves.values())
    leaves = host_leaves(inv)
    roles = {n.name: n.role for n in inv.nodes}
    for node, used in leaves.items():
        on_infra = {leaf.startswith("leaf-infra-") for leaf in used}
        assert on_infra == {roles[node] in INFRA}, node  # infra nodes only on infra leaves, and vice versa
    # the two subnet managers on different leaves; the 22 ports shared 11 / 11
    assert leaves["sm01"] != leaves["sm02"]
    per_leaf = Counter(leaf for used in leaves.values() for leaf in used if leaf.startswith("leaf-infra-"))
    assert per_leaf == {"leaf-infra-01": 11, "leaf-infra-02": 11}
    # their links are individual cables, off the MPO trunks the scalable units grow on
    infra_cables = [c for c in plan.cables if c.a.hca is not None and roles[c.a.device] in INFRA]
    assert len(infra_cables) == 22 and all(c.trunk is None for c in infra_cables)
    merged = with_plan(inv, plan)
    assert run_checks(Index(merged)) == []
    report = check_plan(Index(merged))
    assert report.ok, report.findings
    assert report.oversubscription == "1:1"


def test_rail_leaves_serve_only_their_rail_with_infrastructure_nodes_out_of_them() -> None:
    plan = plan_fabric(prod_infra())
    rail_of = {s.name: s.rail for s in plan.switches if s.rail is not None}
    for c in plan.cables:
        if c.a.hca is not None and c.b.device in rail_of:
            assert c.a.hca == f"mlx5_{rail_of[c.b.device]}"


def test_adding_infrastructure_or_compute_nodes_moves_no_cable() -> None:
    full = prod_infra(max_sus=14, infra_leaves=2)
    nodes = full.nodes
    compute = [n for n in nodes if n.role == "compute"]
    infra = [n for n in nodes if n.role in INFRA]
    smaller = full.model_copy(update={"nodes": compute[:236] + infra[:15]})
    small_plan, big_plan = plan_fabric(smaller), plan_fabric(full)
    big = {c.id: cable_key(c) for c in big_plan.cables}
    assert all(big[c.id] == cable_key(c) for c in small_plan.cables)
    big_switches = {s.name: s for s in big_plan.switches}
    assert all(big_switches[s.name] == s for s in small_plan.switches)


def test_dual_port_infrastructure_nodes_span_two_leaves() -> None:
    # 40 two-port nodes, the last 6 storage servers: 12 ports on 2 infrastructure leaves
    inv = synth(40, 2, su_size=16, infra_roles=["storage"])
    nodes = [n.model_copy(update={"role": "storage"}) if i >= 34 else n for i, n in enumerate(inv.nodes)]
    inv = inv.model_copy(update={"nodes": nodes})
    leaves = host_leaves(inv)
    storage = [n.name for n in nodes if n.role == "storage"]
    assert all(len(set(leaves[name])) == 2 for name in storage)
    assert all(all(leaf.startswith("leaf-infra-") for leaf in leaves[name]) for name in storage)
    plan = plan_fabric(inv)
    assert plan.design.compute_sus == 3  # 34 nodes at 16 a unit
    report = check_plan(Index(with_plan(inv, plan)))
    assert report.ok, report.findings


def test_spread_takes_turns_and_keeps_a_nodes_ports_apart() -> None:
    one = (Endpoint("mlx5_0", 1, "HDR"),)
    two = (Endpoint("mlx5_0", 1, "HDR"), Endpoint("mlx5_1", 1, "HDR"))
    nodes = [FabricNode("sm01", "r", 1, one, True), FabricNode("sm02", "r", 2, one, True),
             FabricNode("lus01", "r", 3, two, True), FabricNode("lus02", "r", 5, two, True)]
    spread = infra_spread(nodes, leaves=3, down=2)
    assert spread == [[(0, 1)], [(1, 1)], [(2, 1), (0, 2)], [(1, 2), (2, 2)]]
    with pytest.raises(PlanError, match="no free port left"):
        infra_spread([*nodes, FabricNode("lus03", "r", 7, one, True)], leaves=3, down=2)


def test_too_few_infrastructure_leaves_is_an_error_with_the_count_needed() -> None:
    with pytest.raises(PlanError) as err:
        plan_fabric(prod_infra(infra_leaves=1))
    assert "22 infrastructure node ports need 2 leaves of 20 down ports" in str(err.value)
    assert err.value.suggestions == ("infra_leaves: 2",)


def test_infrastructure_roles_must_be_fabric_roles() -> None:
    with pytest.raises(ValidationError, match=r"storage not in fabric\.roles"):
        FabricSpec(roles=["compute"], infra_roles=["storage"])
