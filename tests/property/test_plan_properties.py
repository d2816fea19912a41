"""Planner properties over random valid specs: a correct folded Clos, cabled once, growth-stable."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from clusterforge.catalog import catalog
from clusterforge.check import run_checks
from clusterforge.model import FabricSpec, Inventory
from clusterforge.model.index import Index
from clusterforge.plan import Plan, check_plan, plan_fabric
from clusterforge.plan.design import RATIOS
from clusterforge.plan.synthetic import Shape, synthetic_inventory

CAT = catalog()
FAST = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Case:
    spec: FabricSpec
    nodes: int
    ports: int


@st.composite
def cases(draw: st.DrawFn) -> Case:
    model = draw(st.sampled_from(["QM8700", "QM9700"]))
    ports = CAT.switches[model].ports
    ratio = draw(st.sampled_from(sorted(RATIOS)))
    r = RATIOS[ratio]
    su = r * draw(st.integers(min_value=1, max_value=min(16 // r, ports // (r + 1))))
    rails = draw(st.integers(min_value=1, max_value=4))
    tiers = draw(st.sampled_from(["auto", 2, 3]))
    max_units = ports // rails if tiers == 2 else 6  # 2 tiers: every leaf must fit the spines
    units = draw(st.integers(min_value=1, max_value=min(6, max_units)))
    nodes = draw(st.integers(min_value=(units - 1) * su + 1, max_value=units * su))
    spec = FabricSpec(kind=draw(st.sampled_from(["rail-optimized", "fat-tree"])), tiers=tiers,
                      rate=CAT.switches[model].rate, leaf_model=model, oversubscription=ratio,  # type: ignore[arg-type,unused-ignore]
                      su_size=su, max_sus=units)
    return Case(spec, nodes, rails)


def floor(case: Case) -> Inventory:
    return synthetic_inventory(Shape(nodes=case.nodes, ports_per_node=case.ports, nodes_per_rack=4, node_u=4),
                               case.spec, CAT)


def merged(inv: Inventory, plan: Plan) -> Inventory:
    return inv.model_copy(update={"switches": list(plan.switches), "cables": list(plan.cables),
                                  "patch_panels": list(plan.patch_panels), "trunks": list(plan.trunks)})


@FAST
@given(cases())
def test_every_port_cabled_once_and_no_switch_port_twice(case: Case) -> None:
    inv = floor(case)
    plan = plan_fabric(inv)
    ends = Counter(ref.key for c in plan.cables for ref in (c.a, c.b))
    assert max(ends.values()) == 1
    host = {k for k in ends if k[1] is not None}
    assert host == set(Index(inv).host_ports)  # every HCA port of every node, exactly once
    radix = {s.name: CAT.switches[s.model].ports * (2 if s.split else 1) for s in plan.switches}
    assert all(1 <= port <= radix[dev] for dev, hca, port in ends if hca is None)
    assert run_checks(Index(merged(inv, plan))) == []


@FAST
@given(cases())
def test_folded_clos_with_the_ratio_asked(case: Case) -> None:
    inv = floor(case)
    plan = plan_fabric(inv)
    d = plan.design
    assert d.su_size == RATIOS[case.spec.oversubscription] * d.uplinks
    assert d.su_size + d.uplinks <= d.leaf.ports
    pod_of = {s.name: s.group for s in plan.switches if s.role == "spine"}
    links: dict[str, Counter[str]] = defaultdict(Counter)
    for c in plan.cables:
        if c.a.hca is None and c.b.device in pod_of:
            links[c.a.device][c.b.device] += 1
    for leaf, per_spine in links.items():
        pod = pod_of[next(iter(per_spine))]
        spines = [s for s, p in pod_of.items() if p == pod]
        assert sorted(per_spine) == sorted(spines), leaf  # every spine of its pod
        assert set(per_spine.values()) == {d.leaf_spine_links}  # the same number of links
    report = check_plan(Index(merged(inv, plan)))
    assert report.ok, report.findings
    assert report.worst_leaf_ratio is not None and report.worst_leaf_ratio <= RATIOS[case.spec.oversubscription]
    assert report.max_switch_hops in ((1, 3) if d.tiers == 2 else (1, 3, 5))


@FAST
@given(cases(), st.data())
def test_growth_never_moves_a_cable(case: Case, data: st.DataObject) -> None:
    inv = floor(case)
    fewer = data.draw(st.integers(min_value=1, max_value=case.nodes))
    small = plan_fabric(inv.model_copy(update={"nodes": inv.nodes[:fewer]}))
    big = plan_fabric(inv)
    big_cables = {c.id: c for c in big.cables}
    for c in small.cables:
        assert big_cables[c.id] == c  # same id, same ports, media, length, trunk and lane
    big_switches = {s.name: s for s in big.switches}
    assert all(big_switches[s.name] == s for s in small.switches)
    big_trunks = {t.id: t for t in big.trunks}
    assert all(big_trunks[t.id] == t for t in small.trunks)
    assert set(small.patch_panels) <= set(big.patch_panels)
    assert small.design.sus == math.ceil(fewer / small.design.su_size)


@dataclass(frozen=True)
class InfraCase:
    inv: Inventory  # the last `infra` nodes are storage servers on infrastructure leaves
    compute: int
    infra: int


@st.composite
def infra_cases(draw: st.DrawFn) -> InfraCase:
    case = draw(cases())
    infra = draw(st.integers(min_value=1, max_value=min(8, case.nodes)))
    inv = floor(case)
    d_su = case.spec.su_size or 1
    leaves = math.ceil(infra * case.ports / d_su) + draw(st.integers(min_value=0, max_value=1))
    units = case.spec.max_sus or 1
    assume(case.spec.tiers != 2 or (units + math.ceil(leaves / case.ports)) * case.ports
           <= CAT.switches[case.spec.leaf_model].ports)  # 2 tiers: the extra leaves must fit the spines
    assert inv.fabric is not None
    spec = inv.fabric.model_copy(update={"infra_roles": ["storage"], "infra_leaves": leaves})
    cut = case.nodes - infra
    nodes = [n.model_copy(update={"role": "storage"}) if i >= cut else n for i, n in enumerate(inv.nodes)]
    return InfraCase(inv.model_copy(update={"nodes": nodes, "fabric": spec}), cut, infra)


@FAST
@given(infra_cases(), st.data())
def test_infrastructure_leaves_hold_only_infrastructure_nodes_and_grow_in_place(
        case: InfraCase, data: st.DataObject) -> None:
    inv = case.inv
    plan = plan_fabric(inv)
    ends = Counter(ref.key for c in plan.cables for ref in (c.a, c.b))
    assert max(ends.values()) == 1
    assert {k for k in ends if k[1] is not None} == set(Index(inv).host_ports)
    storage = {n.name for n in inv.nodes if n.role == "storage"}
    for c in plan.cables:
        if c.a.hca is not None:
            assert c.b.device.startswith("leaf-infra-") == (c.a.device in storage), c.id
    merged_inv = merged(inv, plan)
    assert run_checks(Index(merged_inv)) == []
    report = check_plan(Index(merged_inv))
    assert report.ok, report.findings
    # fewer compute nodes and fewer storage servers: every cable of that plan is in this one
    compute = data.draw(st.integers(min_value=1, max_value=max(1, case.compute))) if case.compute else 0
    infra = data.draw(st.integers(min_value=1, max_value=case.infra))
    nodes = inv.nodes[:compute] + inv.nodes[case.compute:case.compute + infra]
    small = plan_fabric(inv.model_copy(update={"nodes": nodes}))
    big_cables = {c.id: c for c in plan.cables}
    assert all(big_cables[c.id] == c for c in small.cables)
    big_switches = {s.name: s for s in plan.switches}
    assert all(big_switches[s.name] == s for s in small.switches)
