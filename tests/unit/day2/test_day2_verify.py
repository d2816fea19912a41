"""The plan verifier on hand-built bad plans: each rule has a plan it must reject, naming step and rule."""

from __future__ import annotations

import dataclasses
from typing import Any

from _day2_util import add_gpu09, index_of, lab_data, node, plan_for

from clusterforge.day2 import ChangePlan, Step
from clusterforge.day2.verify import Violation, verify

DRAIN = ["scontrol", "update", "nodename={host}", "state=drain"]


def _renumber(steps: list[Step]) -> tuple[Step, ...]:
    return tuple(dataclasses.replace(s, n=i + 1) for i, s in enumerate(steps))


def _with(plan: ChangePlan, steps: list[Step]) -> ChangePlan:
    return dataclasses.replace(plan, steps=_renumber(steps))


def _rules(plan: ChangePlan, old: dict[str, Any], new: dict[str, Any]) -> list[Violation]:
    return verify(plan, index_of(old), index_of(new))


def _find(plan: ChangePlan, phase: str, subject: str | None = None) -> int:
    return next(i for i, s in enumerate(plan.steps) if s.phase == phase and subject in (None, s.subject))


def _swap() -> tuple[dict[str, Any], ChangePlan]:
    data = lab_data()
    node(data, "gpu04").update(rack="lab-su02-r01", u=2)
    node(data, "gpu05").update(rack="lab-su01-r01", u=14)
    return data, plan_for(data)


def test_good_plan_passes() -> None:
    data, plan = _swap()
    assert _rules(plan, lab_data(), data) == []


def test_install_into_an_occupied_slot_is_rejected() -> None:
    data, plan = _swap()
    steps = list(plan.steps)
    install = steps.pop(_find(plan, "install", "gpu04"))
    steps.insert(_find(plan, "remove", "gpu05"), install)  # before gpu05 leaves U2
    found = _rules(_with(plan, steps), lab_data(), data)
    assert any(v.rule == "SLOT" and "occupied by gpu05" in v.message for v in found)


def test_unplug_from_a_live_host_is_rejected() -> None:
    data, plan = _swap()
    steps = [s for s in plan.steps if not (s.phase == "drain" and s.subject == "gpu04")]
    found = _rules(_with(plan, steps), lab_data(), data)
    bad = next(v for v in found if v.rule == "DRAIN")
    assert "unplugged from gpu04 while it is in service" in bad.message
    assert str(bad).startswith(f"step {bad.step}: DRAIN:")


def test_removing_a_device_with_a_cable_still_plugged_is_rejected() -> None:
    data, plan = _swap()
    steps = [s for s in plan.steps if not (s.phase == "unplug" and s.subject == "C-00007")]
    found = _rules(_with(plan, steps), lab_data(), data)
    assert any(v.rule == "CABLE" and "C-00007 still plugged" in v.message for v in found)


def test_plugging_before_the_device_is_in_its_new_place_is_rejected() -> None:
    data, plan = _swap()
    steps = list(plan.steps)
    plug = steps.pop(_find(plan, "plug", "C-00007"))
    steps.insert(_find(plan, "remove", "gpu04"), plug)
    found = _rules(_with(plan, steps), lab_data(), data)
    assert any(v.rule == "CABLE" and "not installed where the new inventory puts it" in v.message for v in found)


def test_resume_before_validation_is_rejected() -> None:
    data, plan = _swap()
    steps = list(plan.steps)
    resume = steps.pop(_find(plan, "resume", "gpu04"))
    steps.insert(_find(plan, "validate"), resume)
    found = _rules(_with(plan, steps), lab_data(), data)
    assert any(v.rule == "RESUME" and "before a validation" in v.message for v in found)


def test_a_step_left_out_breaks_the_end_state() -> None:
    data, plan = _swap()
    steps = [s for s in plan.steps if not (s.phase == "plug" and s.subject == "C-00010")]
    found = _rules(_with(plan, steps), lab_data(), data)
    assert [v.rule for v in found] == ["END"] and found[0].step == 0
    assert "C-00010" in found[0].message


def test_compute_beyond_the_drain_cap_is_rejected() -> None:
    data = lab_data()
    data["software"]["nvidia_driver"] = "550.127.05"
    plan = plan_for(data)
    # the waves merged: every GPU node drained before any is resumed
    drains = [s for s in plan.steps if s.phase == "drain"]
    rest = [s for s in plan.steps if s.phase != "drain"]
    found = _rules(_with(plan, drains + rest), lab_data(), data)
    assert any(v.rule == "HA" and "drained at once" in v.message for v in found)


def _two_sms() -> dict[str, Any]:
    data = lab_data()
    data["nodes"].append({"name": "sm02", "rack": "lab-core01", "u": 26, "role": "subnet-manager",
                          "profile": "sm-node"})
    data["cables"].append({"id": "C-00050", "a": "sm02/mlx5_0/1", "b": "leaf-infra01/10", "media": "AOC",
                           "length_m": 3})
    data["opensm"]["sm_nodes"].append({"node": "sm02", "priority": 1})
    data["lustre"][0]["failover_pairs"] = [["lus01", "lus02"]]
    return data


def test_subnet_managers_one_at_a_time_and_a_standby_takes_over_first() -> None:
    old = _two_sms()
    new = _two_sms()
    new["software"]["doca_ofed"] = "23.10-2.1.3.1"
    plan = plan_for(new, old)
    assert _rules(plan, old, new) == []
    handover = plan.steps[_find(plan, "handover")]
    assert handover.subject == "sm02" and handover.n < plan.steps[_find(plan, "takeout", "sm01")].n
    assert not any(s.subject == "sm02" for s in plan.steps if s.phase == "takeout" and s.n < handover.n)
    without = [s for s in plan.steps if s.phase != "handover"]
    found = _rules(_with(plan, without), old, new)
    assert any(v.rule == "HA" and "master subnet manager" in v.message for v in found)
    # both SMs out together
    sm_out = [s for s in plan.steps if s.phase == "takeout" and s.subject in ("sm01", "sm02")]
    rest = [s for s in plan.steps if s not in sm_out]
    found = _rules(_with(plan, [plan.steps[_find(plan, "handover")], *sm_out[::-1], *rest]), old, new)
    assert any(v.rule == "HA" and "no other subnet manager" in v.message for v in found)


def test_lustre_failover_pair_never_wholly_out() -> None:
    old = _two_sms()
    new = _two_sms()
    new["software"]["doca_ofed"] = "23.10-2.1.3.1"
    plan = plan_for(new, old)
    outs = [s.n for s in plan.steps if s.phase == "takeout" and s.subject in ("lus01", "lus02")]
    backs = [s.n for s in plan.steps if s.phase == "return" and s.subject in ("lus01", "lus02")]
    assert outs[0] < backs[0] < outs[1]  # one, back, then the other
    both = [s for s in plan.steps if s.phase == "takeout" and s.subject in ("lus01", "lus02")]
    rest = [s for s in plan.steps if s not in both]
    found = _rules(_with(plan, [*both, *rest]), old, new)
    assert any(v.rule == "HA" and "failover partner" in v.message for v in found)


def test_opensm_files_before_learning_new_hardware_are_rejected() -> None:
    data = lab_data()
    add_gpu09(data)
    plan = plan_for(data)
    steps = [s for s in plan.steps if s.phase != "learn"]
    found = _rules(_with(plan, steps), lab_data(), data)
    assert any(v.rule == "LEARN" and "gpu09" in v.message for v in found)
    early = list(plan.steps)
    learn = early.pop(_find(plan, "learn"))
    early.insert(_find(plan, "plug"), learn)  # before it is cabled
    found = _rules(_with(plan, early), lab_data(), data)
    assert any(v.rule == "LEARN" and "before it is cabled" in v.message for v in found)


def test_cooling_change_needs_the_rack_drained_and_commissioned() -> None:
    data = lab_data()
    next(r for r in data["racks"] if r["name"] == "lab-su01-r01")["cooling"] = "cold-plate"
    plan = plan_for(data)
    no_drain = [s for s in plan.steps if s.phase not in ("drain", "resume")]
    found = _rules(_with(plan, no_drain), lab_data(), data)
    assert any(v.rule == "DRAIN" and "cooling changes while" in v.message for v in found)
    no_commission = [s for s in plan.steps if s.phase != "commission"]
    found = _rules(_with(plan, no_commission), lab_data(), data)
    assert any(v.rule == "RESUME" and "commissioned" in v.message for v in found)


def test_manual_steps_carry_no_command_and_machine_steps_do() -> None:
    data, plan = _swap()
    steps = list(plan.steps)
    i = _find(plan, "plug")
    steps[i] = dataclasses.replace(steps[i], argv=("rm", "-rf", "/"))
    found = _rules(_with(plan, steps), lab_data(), data)
    assert any(v.rule == "PHASE" for v in found)
