"""MPO-24 trunk packing: links per trunk, lane groups, panels, fiber type and reach."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from _plan_util import prod_without_fabric, synth

from clusterforge.model import Inventory
from clusterforge.plan import Plan, PlanError, plan_fabric


def _prod_plan() -> Plan:
    return plan_fabric(prod_without_fabric(rate="HDR", leaf_model="QM8700", roles=["compute"]))


def test_prod_leaf_spine_links_ride_trunks_three_per_trunk() -> None:
    # Every leaf-spine link leaves row-a for row-b. HDR SR4 uses 8 fibers: 3 links per 24-fiber trunk.
    # Per SU: 2 leaves x 14 spines in prod-core01 = 28 links -> 10 trunks; x 6 spines in prod-core02
    # = 12 links -> 4 trunks. 13 SUs x 14 = 182 trunks carry the 520 links.
    plan = _prod_plan()
    trunked = [c for c in plan.cables if c.trunk is not None]
    assert len(trunked) == plan.links_on_trunks == 520
    assert len(plan.trunks) == 182
    per_trunk = Counter(c.trunk for c in trunked)
    assert Counter(per_trunk.values()) == {3: 13 * (9 + 4), 1: 13}  # 28 = 9 x 3 + 1; 12 = 4 x 3
    lanes = {(c.trunk, c.lane_group) for c in trunked}
    assert len(lanes) == 520 and {lane for _, lane in lanes} == {0, 1, 2}
    assert {c.media for c in trunked} == {"fiber"} and {c.fiber_type for c in trunked} == {"OM4"}


def test_prod_trunk_ids_and_panels() -> None:
    plan = _prod_plan()
    first = plan.trunks[0]
    assert (first.id, first.a_panel, first.b_panel) == (
        "T-prod-core01-prod-su01-net-1", "prod-core01-pp01", "prod-su01-net-pp01")
    panels = {p.name: p for p in plan.patch_panels}
    # each net rack terminates 14 trunks (one 24-port panel); prod-core01 13 x 10 = 130 (6 panels),
    # prod-core02 13 x 4 = 52 (3 panels): 13 + 6 + 3 = 22 panels, filled top-down
    assert len(panels) == 22
    assert sorted(p.u for p in panels.values() if p.rack == "prod-core01") == [37, 38, 39, 40, 41, 42]
    ends: Counter[str] = Counter()
    for t in plan.trunks:
        ends[t.a_panel] += 1
        ends[t.b_panel] += 1
        assert panels[t.a_panel].rack != panels[t.b_panel].rack
    assert max(ends.values()) <= 24


def test_links_on_a_trunk_share_its_two_racks() -> None:
    plan = _prod_plan()
    racks = {s.name: s.rack for s in plan.switches}
    panels = {p.name: p.rack for p in plan.patch_panels}
    trunk_racks = {t.id: {panels[t.a_panel], panels[t.b_panel]} for t in plan.trunks}
    for c in plan.cables:
        if c.trunk:
            assert {racks[c.a.device], racks[c.b.device]} == trunk_racks[c.trunk]


def test_four_fiber_links_pack_six_to_a_trunk() -> None:
    # NDR200 (2 lanes) uses 4 fibers: 24 // 4 = 6 links per trunk
    plan = plan_fabric(synth(128, 8, split=True, rate="NDR200"))
    per_trunk = Counter(c.trunk for c in plan.cables if c.trunk)
    assert max(per_trunk.values()) == 6
    assert all("-f4-" in t for t in per_trunk)
    assert {c.lane_group for c in plan.cables if c.trunk} == set(range(6))


def _far(inv: Inventory, pitch: float) -> Inventory:
    rows = [r.model_copy(update={"pitch_m": pitch}) for r in inv.site.rows]
    return inv.model_copy(update={"site": inv.site.model_copy(update={"rows": rows})})


def test_single_mode_where_multimode_does_not_reach() -> None:
    plan = plan_fabric(_far(synth(64, 2, su_size=32, sus_per_row=1), pitch=60))
    assert {t.fiber_type for t in plan.trunks} == {"OS2"}
    assert {c.fiber_type for c in plan.cables if c.trunk} == {"OS2"}


def test_forced_fiber_beyond_reach_is_an_error() -> None:
    inv = _far(synth(64, 2, su_size=32, sus_per_row=1, trunk_fiber="OM4"), pitch=60)
    with pytest.raises(PlanError) as info:
        plan_fabric(inv)
    assert "of OM4 fiber is beyond its 50 m reach at NDR" in info.value.message
    assert info.value.suggestions[0].startswith("trunk_fiber: OS2")


def test_trunk_lengths_are_orderable() -> None:
    plan = _prod_plan()
    sizes = {t.length_m for t in plan.trunks}
    assert sizes <= {1, 2, 3, 5, 7, 10, 15, 20, 25, 30, 40, 50, 70, 100, 150, 200, 300, 500}
    by_trunk: dict[str, list[float]] = defaultdict(list)
    for c in plan.cables:
        if c.trunk:
            by_trunk[c.trunk].append(c.length_m)
    assert all(length <= 100 for lengths in by_trunk.values() for length in lengths)  # OM4 at HDR
