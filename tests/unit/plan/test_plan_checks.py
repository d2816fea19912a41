"""Plan checks on hand-declared fabrics (the example inventories) and on broken ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from _plan_util import ROOT, synth, with_plan

from clusterforge.inventory.load import load_inventory
from clusterforge.model import Cable, FabricSpec, Inventory
from clusterforge.model.index import Index
from clusterforge.plan import check_plan


@pytest.fixture(scope="module")
def prod() -> Inventory:
    return load_inventory(Path(ROOT / "tests" / "fixtures" / "inventories" / "prod-hand"))[0]


def _rules(inv: Inventory, spec: FabricSpec | None = None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in check_plan(Index(inv), spec).findings:
        out.setdefault(f.rule, []).append(f.subject)
    return out


def test_hand_declared_prod_is_a_correct_rail_optimized_fat_tree(prod: Inventory) -> None:
    report = check_plan(Index(prod))
    assert report.ok and report.findings == ()
    # 26 rail leaves + 2 infra leaves, 20 spines; 534 nodes ports, 28 x 20 uplinks
    assert report.switches == {"leaf": 28, "spine": 20, "core": 0}
    assert report.cables == {"node_leaf": 534, "leaf_spine": 560, "spine_core": 0}
    assert report.tiers == 2 and report.max_switch_hops == 3
    assert report.oversubscription == "1:1"
    assert report.bisection_gbps == 534 * 200 / 2
    # a full rail leaf: 20 nodes + 20 uplinks = 40 ports; a spine: 28 of 40 used
    assert report.free_ports["leaf-su01-r0"] == 0 and report.free_ports["spine01"] == 12


def test_missing_uplink_makes_the_pod_uneven(prod: Inventory) -> None:
    cables = [c for c in prod.cables if not (c.a.device == "leaf-su03-r1" and c.b.device == "spine07")]
    found = _rules(prod.model_copy(update={"cables": cables}))
    assert found == {"FT-UNEVEN": ["leaf-su03-r1"]}


def test_leaf_to_leaf_cable_is_not_a_fat_tree(prod: Inventory) -> None:
    extra = Cable.model_validate({"id": "X-1", "a": "leaf-su01-r0/40", "b": "leaf-su02-r0/40",
                                  "media": "AOC", "length_m": 10})
    cables = [c for c in prod.cables if str(c.a) not in ("leaf-su01-r0/40", "leaf-su02-r0/40")] + [extra]
    found = _rules(prod.model_copy(update={"cables": cables}))
    assert found["FT-TIER"] == ["X-1"]


def test_node_port_on_the_wrong_rail(prod: Inventory) -> None:
    # swap the rail-1 port of gpu0001 onto the rail-0 leaf and vice versa
    cables = []
    for c in prod.cables:
        if str(c.a) == "gpu0001/mlx5_0/1":
            c = c.model_copy(update={"a": c.a.model_copy(update={"hca": "mlx5_1"})})
        elif str(c.a) == "gpu0001/mlx5_1/1":
            c = c.model_copy(update={"a": c.a.model_copy(update={"hca": "mlx5_0"})})
        cables.append(c)
    found = _rules(prod.model_copy(update={"cables": cables}))
    assert found["RAIL-MIXED"] == ["leaf-su01-r0", "leaf-su01-r1"]
    assert found["RAIL-LABEL"] == ["leaf-su01-r0", "leaf-su01-r1"]


def test_oversubscription_beyond_the_spec() -> None:
    inv = with_plan(synth(128, 2, su_size=32, oversubscription="2:1"))
    report = check_plan(Index(inv), inv.fabric.model_copy(update={"oversubscription": "1:1"}))  # type: ignore[union-attr]
    assert report.oversubscription == "2:1"
    assert {f.rule for f in report.findings} == {"OVERSUB"}


def test_partly_filled_leaves_achieve_better_than_asked() -> None:
    inv = with_plan(synth(40, 1, su_size=32, oversubscription="2:1"))  # SU 2 has 8 of 32 nodes
    report = check_plan(Index(inv))
    assert report.ok and report.oversubscription == "2:1"  # the worst (full) leaf


def test_disconnected_leaf(prod: Inventory) -> None:
    cables = [c for c in prod.cables if c.a.device != "leaf-su05-r0" or c.a.port <= 20]
    found = _rules(prod.model_copy(update={"cables": cables}))
    assert found["FT-NO-UPLINK"] == ["leaf-su05-r0"]
    assert found["FT-DISCONNECTED"] == ["leaf-su05-r0"]


def test_three_tier_shape_is_checked() -> None:
    inv = with_plan(synth(300, 8, su_size=32, tiers=3))
    assert check_plan(Index(inv)).ok
    cables = [c for c in inv.cables if not (c.a.device == "spine-p01-01" and c.b.device == "core-01-01")]
    found = _rules(inv.model_copy(update={"cables": cables}))
    assert "FT-UNEVEN" in found and "spine-p01-01" in found["FT-UNEVEN"]


def test_findings_are_capped_per_rule(prod: Inventory) -> None:
    # 27 of the 28 leaves lose their link to spine01: 27 uneven leaves, 20 shown and a summary
    cables = [c for c in prod.cables if c.b.device != "spine01" or c.a.device == "leaf-infra02"]
    report = check_plan(Index(prod.model_copy(update={"cables": cables})))
    uneven = [f for f in report.findings if f.rule == "FT-UNEVEN"]
    assert len(uneven) == 21 and uneven[-1].message == "and 7 more like these"


def test_idle_spine(prod: Inventory) -> None:
    cables = [c for c in prod.cables if c.b.device != "spine01"]
    assert _rules(prod.model_copy(update={"cables": cables})) == {"FT-IDLE": ["spine01"]}


def test_report_to_dict_is_json_ready(prod: Inventory) -> None:
    data = check_plan(Index(prod)).to_dict()
    assert data["ok"] is True and data["findings"] == [] and data["tiers"] == 2
