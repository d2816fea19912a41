"""Day-2 moves the first planner left open: a rack that rolls to another place with its devices, a patch
panel that moves (its trunks re-laid), multi-U devices in the verifier's floor model, and the renumber
warning now that addresses are frozen. Each: a scenario whose plan is proven, and a bad plan rejected."""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path
from typing import Any

from _day2_util import index_of, lab_data, node, plan_for

from clusterforge.api import load_checked
from clusterforge.day2 import ChangePlan, Step, change_plan
from clusterforge.day2.steps import PULL_TRUNK
from clusterforge.day2.verify import Violation, verify
from clusterforge.model import Inventory
from clusterforge.model.index import Index

ROOT = Path(__file__).resolve().parents[3]


def _with(plan: ChangePlan, steps: list[Step]) -> ChangePlan:
    return dataclasses.replace(plan, steps=tuple(dataclasses.replace(s, n=i + 1) for i, s in enumerate(steps)))


def _at(plan: ChangePlan, phase: str, subject: str) -> int:
    return next(i for i, s in enumerate(plan.steps) if (s.phase, s.subject) == (phase, subject))


def _subjects(plan: ChangePlan, phase: str) -> list[str]:
    return sorted(s.subject for s in plan.steps if s.phase == phase)


def _dev(end: Any) -> str:
    return str(end["device"] if isinstance(end, dict) else end.split("/")[0])


# -- a rack that moves -------------------------------------------------------------------------------
def _rack_moved() -> tuple[dict[str, Any], ChangePlan]:
    data = lab_data()
    next(r for r in data["racks"] if r["name"] == "lab-su01-r01").update(row="row-b", position=1)
    return data, plan_for(data)


def test_a_rack_that_moves_is_drained_uncabled_moved_recabled_and_validated() -> None:
    data, plan = _rack_moved()
    assert verify(plan, index_of(lab_data()), index_of(data)) == []
    inside = ["gpu01", "gpu02", "gpu03", "gpu04"]
    cables = sorted(c["id"] for c in data["cables"] if _dev(c["a"]) in inside or _dev(c["b"]) in inside)
    assert sorted(s.subject for s in plan.steps if s.phase == "drain") == inside
    assert _subjects(plan, "unplug") == cables == _subjects(plan, "plug")
    move = _at(plan, "install", "lab-su01-r01")
    assert "row-a position 1 -> row-b position 1" in plan.steps[move].action
    assert all(s.n < plan.steps[move].n for s in plan.steps if s.phase == "unplug")
    assert all(s.n > plan.steps[move].n for s in plan.steps if s.phase == "plug")
    last_plug = max(s.n for s in plan.steps if s.phase == "plug")
    validate = min(s.n for s in plan.steps if s.phase == "validate" and s.n > last_plug)
    assert all(s.n > validate for s in plan.steps if s.phase == "resume")
    assert not any("does not take its devices out" in w for w in plan.warnings)
    assert _subjects(plan, "remove") == []  # the rack rolls with its devices in it


def test_a_rack_moved_with_its_cables_plugged_or_hosts_live_is_rejected() -> None:
    data, plan = _rack_moved()
    old, new = index_of(lab_data()), index_of(data)
    steps = list(plan.steps)
    move = steps.pop(_at(plan, "install", "lab-su01-r01"))
    steps.insert(0, move)  # before anything is drained or unplugged
    found = verify(_with(plan, steps), old, new)
    assert any(v.rule == "DRAIN" and "rack lab-su01-r01 moves while gpu01" in v.message for v in found)
    assert any(v.rule == "CABLE" and "rack lab-su01-r01 moves with cable(s)" in v.message for v in found)
    # plugged back before the rack stands at its new place
    steps = list(plan.steps)
    move = steps.pop(_at(plan, "install", "lab-su01-r01"))
    steps.insert(max(i for i, s in enumerate(steps) if s.phase == "plug") + 1, move)
    found = verify(_with(plan, steps), old, new)
    assert any(v.rule == "CABLE" and "not installed where the new inventory puts it" in v.message for v in found)


# -- a patch panel that moves ------------------------------------------------------------------------
@cache
def _staging() -> Index:
    return load_checked(ROOT / "inventories" / "staging").index


def _panel_moved() -> tuple[Index, Index, ChangePlan, str]:
    old = _staging()
    data = old.inv.model_dump(mode="json")
    panel = next(p for p in data["patch_panels"] if p["name"] == "stag-su01-net-pp01")
    panel["u"] = 40  # a free unit of its rack
    new = Index(Inventory.model_validate(data))
    return old, new, change_plan(old, new, "inventories/staging", "staging"), panel["name"]


def test_a_patch_panel_that_moves_has_its_trunks_and_patched_cables_redone() -> None:
    old, new, plan, panel = _panel_moved()
    assert verify(plan, old, new) == []
    trunks = sorted(t.id for t in old.inv.trunks if panel in (t.a_panel, t.b_panel))
    riding = sorted(c.id for c in old.inv.cables if c.trunk in trunks)
    assert trunks and riding
    assert _subjects(plan, "trunks") == sorted(trunks * 2)  # each pulled off the panel, then laid again
    assert _subjects(plan, "unplug") == riding == _subjects(plan, "plug")
    remove, install = _at(plan, "remove", panel), _at(plan, "install", panel)
    pull = [i for i, s in enumerate(plan.steps) if s.phase == "trunks" and s.action.startswith(PULL_TRUNK)]
    relay = [i for i, s in enumerate(plan.steps) if s.phase == "trunks" and i not in pull]
    assert sorted(plan.steps[i].subject for i in pull) == trunks == sorted(plan.steps[i].subject for i in relay)
    assert max(_at(plan, "unplug", c) for c in riding) < min(pull) and max(pull) < remove < install < min(relay)
    assert max(relay) < min(_at(plan, "plug", c) for c in riding)
    assert _subjects(plan, "drain") == _subjects(plan, "takeout") == []  # switch-to-switch links only


def test_a_panel_moved_under_patched_cables_or_never_relaid_is_rejected() -> None:
    old, new, plan, panel = _panel_moved()
    steps = list(plan.steps)
    remove = steps.pop(_at(plan, "remove", panel))
    steps.insert(0, remove)  # before its cables are unplugged
    found = verify(_with(plan, steps), old, new)
    assert any(v.rule == "CABLE" and f"panel {panel} is taken out with" in v.message for v in found)
    pulled = [s for s in plan.steps if not (s.phase == "trunks" and s.action.startswith(PULL_TRUNK))]
    found = verify(_with(plan, pulled), old, new)  # the panel moves with its trunks still laid to it
    assert any(v.rule == "CABLE" and f"panel {panel} is taken out with trunk" in v.message
               and "still laid to it" in v.message for v in found)
    never = [s for s in plan.steps if not (s.phase == "trunks" and not s.action.startswith(PULL_TRUNK))]
    found = verify(_with(plan, never), old, new)  # pulled and never laid again
    assert any(v.rule == "CABLE" and "which is not laid" in v.message for v in found)


# -- multi-U devices ---------------------------------------------------------------------------------
def _overlap() -> tuple[dict[str, Any], ChangePlan]:
    """gpu08 (4U: U14-U17) moves up to U20; gpu04 comes into U16 of its rack: U16-U19 overlap gpu08's
    old units though not its lowest one."""
    data = lab_data()
    node(data, "gpu08").update(u=20)
    node(data, "gpu04").update(rack="lab-su02-r01", u=16)
    return data, plan_for(data)


def test_a_multi_u_move_into_units_another_device_leaves_is_proven() -> None:
    data, plan = _overlap()
    assert verify(plan, index_of(lab_data()), index_of(data)) == []
    assert _at(plan, "remove", "gpu08") < _at(plan, "install", "gpu04")


def test_an_install_overlapping_any_occupied_unit_is_rejected() -> None:
    data, plan = _overlap()
    steps = list(plan.steps)
    install = steps.pop(_at(plan, "install", "gpu04"))
    steps.insert(_at(plan, "remove", "gpu08"), install)  # gpu08 still takes U14-U17
    found: list[Violation] = verify(_with(plan, steps), index_of(lab_data()), index_of(data))
    assert any(v.rule == "SLOT" and v.message == "gpu04 is installed at lab-su02-r01 U16-U19, occupied by gpu08 "
               "at U16" for v in found), found


# -- renumbering -------------------------------------------------------------------------------------
def test_a_renumbered_node_is_drained_and_the_warning_says_it_was_asked_for() -> None:
    data = lab_data()
    node(data, "gpu03")["mgmt_ip"] = "10.250.0.99"
    plan = plan_for(data)
    assert verify(plan, index_of(lab_data()), index_of(data)) == []
    warning = next(w for w in plan.warnings if "gpu03 is renumbered" in w)
    assert "addresses are frozen" in warning and "inserted before" not in warning
    assert "gpu03" in _subjects(plan, "drain")
