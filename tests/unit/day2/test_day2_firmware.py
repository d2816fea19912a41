"""A firmware bump is a day-2 change plan (issue #24 item 3, docs/firmware.md "The bump"): the hosts with a card of
the bumped model drained in waves within `deploy.max_drain`, flashed, their firmware activated as the catalog says
(mlxfwreset, or a reboot for the DPUs), validated and resumed; switches one at a time with the nodes cabled to
them out; a downgrade refused unless the new inventory allows it. The verifier's FIRMWARE rule rejects each
hand-broken plan below, and passes every generated one."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from _day2_util import LAB, index_of, lab_data
from typer.testing import CliRunner

from clusterforge.cli.main import app
from clusterforge.day2 import ChangePlan, Step, change_plan
from clusterforge.day2.firmware import FirmwareRefused, cabled_nodes
from clusterforge.day2.verify import Violation, verify
from clusterforge.util.hostlist import expand

OLD_HCA, NEW_HCA = "20.39.2048", "20.40.1000"
OLD_SW, NEW_SW = "27.2010.6102", "27.2012.1010"


def _pinned(hca: str = OLD_HCA, switch: str | None = None, allow: bool = False, image: str | None = None,
            switch_model: str = "QM8700", dpu: str | None = None) -> dict[str, Any]:
    """The lab with its ConnectX-6 (and, when asked, its switches and a BlueField-3 per GPU node) pinned."""
    data = lab_data()
    if switch_model != "QM8700":
        for sw in data["switches"]:
            sw["model"] = switch_model
    hcas: list[dict[str, Any]] = [{"model": "ConnectX-6", "version": hca, **({"image": image} if image else {})}]
    if dpu is not None:
        for p in data["profiles"]:
            if p["name"] == "gpu-node":
                p["dpus"] = [{"name": "mlx5_8", "model": "BlueField-3", "ports": [{"port": 1, "rate": "NDR"}]}]
        hcas.append({"model": "BlueField-3", "version": dpu})
    data["firmware"] = {"hcas": hcas, "allow_downgrade": allow,
                        "switches": [{"model": switch_model, "version": switch}] if switch else []}
    return data


def _plan(old: dict[str, Any], new: dict[str, Any]) -> ChangePlan:
    return change_plan(index_of(old), index_of(new), "inventories/lab", "lab")


def _check(plan: ChangePlan, old: dict[str, Any], new: dict[str, Any]) -> list[Violation]:
    return verify(plan, index_of(old), index_of(new))


def _with(plan: ChangePlan, steps: list[Step]) -> ChangePlan:
    return dataclasses.replace(plan, steps=tuple(dataclasses.replace(s, n=i + 1) for i, s in enumerate(steps)))


def _limit(step: Step) -> list[str]:
    return expand(step.argv[step.argv.index("--limit") + 1])


def _hca_bump() -> tuple[dict[str, Any], dict[str, Any], ChangePlan]:
    old, new = _pinned(), _pinned(NEW_HCA)
    return old, new, _plan(old, new)


# -- the plan -----------------------------------------------------------------------------------------
def test_an_hca_bump_drains_flashes_activates_validates_and_resumes_every_host_in_waves() -> None:
    old, new, plan = _hca_bump()
    assert _check(plan, old, new) == []
    index = index_of(new)
    expected = [n.name for n in index.inv.nodes if index.hardware[n.name].hcas]  # every lab node has a ConnectX-6
    flashes = [s for s in plan.steps if s.phase == "flash"]
    flashed = [h for s in flashes for h in _limit(s)]
    assert sorted(flashed) == sorted(expected)  # each host once
    for s in flashes:
        assert s.argv[:4] == ("clusterforge", "firmware", "flash", "inventories/lab")
        assert s.argv[s.argv.index("--model") + 1] == "ConnectX-6"
        assert s.argv[s.argv.index("--version") + 1] == NEW_HCA
        assert "--allow-downgrade" not in s.argv
    assert len(flashes) > 1  # 8 compute nodes, cluster cap 25 %: waves, not one
    cap = index.inv.deploy.max_drain.cluster_percent * 8 // 100
    for host in expected:  # per host: out -> flash -> activate (mlxfwreset) -> validate -> back, in that order
        out = next(s.n for s in plan.steps if s.phase in ("drain", "takeout") and s.subject == host)
        flash = next(s.n for s in flashes if host in _limit(s))
        act = next(s for s in plan.steps if s.phase == "activate" and host in _limit(s))
        assert act.argv[act.argv.index("--how") + 1] == "mlxfwreset"  # the catalog's ConnectX-6 activation
        val = next(s.n for s in plan.steps if s.phase == "validate" and s.n > act.n)
        back = next(s.n for s in plan.steps if s.phase in ("resume", "return") and s.subject == host)
        assert out < flash < act.n < val < back
    for s in flashes:  # no wave drains more compute than the cap
        assert sum(1 for h in _limit(s) if h.startswith("gpu")) <= cap


def test_a_downgrade_is_refused_unless_the_new_inventory_allows_it() -> None:
    old = _pinned()
    with pytest.raises(FirmwareRefused) as exc:
        _plan(old, _pinned("20.38.1002"))
    assert exc.value.path == ("firmware", "hcas", 0, "version")
    assert "ConnectX-6" in str(exc.value) and "20.39.2048 -> 20.38.1002" in str(exc.value)
    assert "allow_downgrade" in str(exc.value)
    allowed = _pinned("20.38.1002", allow=True)
    plan = _plan(old, allowed)
    assert _check(plan, old, allowed) == []
    assert all("--allow-downgrade" in s.argv for s in plan.steps if s.phase == "flash")
    assert any("firmware pin ConnectX-6 names no image" in w for w in plan.warnings)  # the flash would refuse


def test_an_image_change_at_the_same_version_reflashes() -> None:
    old, new = _pinned(image="firmware/a.bin"), _pinned(image="firmware/b.bin")
    plan = _plan(old, new)
    assert _check(plan, old, new) == []
    flashes = [s for s in plan.steps if s.phase == "flash"]
    assert flashes and all("--reflash" in s.argv for s in flashes)
    assert "/var/lib/clusterforge/firmware/b.bin, staged on each host" in flashes[0].action


def test_a_pin_only_the_new_inventory_has_flashes_nothing_and_warns() -> None:
    old = lab_data()
    new = _pinned()
    plan = _plan(old, new)
    assert not any(s.phase in ("flash", "activate", "upgrade") for s in plan.steps)
    assert any("firmware pin ConnectX-6 is new" in w for w in plan.warnings)


def test_a_dpu_bump_is_activated_by_a_reboot() -> None:
    old, new = _pinned(dpu="32.43.1014"), _pinned(NEW_HCA, dpu="32.44.1000")
    plan = _plan(old, new)
    assert _check(plan, old, new) == []
    acts = [s for s in plan.steps if s.phase == "activate"]
    gpus = {n["name"] for n in old["nodes"] if n.get("profile") == "gpu-node"}
    rebooted = {h for s in acts if s.argv[s.argv.index("--how") + 1] == "reboot" for h in _limit(s)}
    reset = {h for s in acts if s.argv[s.argv.index("--how") + 1] == "mlxfwreset" for h in _limit(s)}
    assert rebooted == gpus  # the BlueField-3 hosts: one reboot activates both of their cards
    assert reset and not reset & rebooted  # the others: mlxfwreset of their ConnectX-6


def test_switches_go_one_at_a_time_with_their_nodes_out() -> None:
    old, new = _pinned(switch=OLD_SW), _pinned(switch=NEW_SW)
    plan = _plan(old, new)
    assert _check(plan, old, new) == []
    index = index_of(old)
    ups = [s for s in plan.steps if s.phase == "upgrade"]
    assert sorted(s.subject for s in ups) == sorted(sw.name for sw in index.inv.switches)  # QM8700: by hand
    assert all(s.manual and not s.argv and NEW_SW in s.action for s in ups)
    cabled = cabled_nodes(index, {s.subject for s in ups})
    out: set[str] = set()
    for s in plan.steps:  # replay the service state: at each upgrade, its nodes are out, no other switch pending
        if s.phase in ("drain", "takeout"):
            out.add(s.subject)
        elif s.phase in ("resume", "return"):
            out.discard(s.subject)
        elif s.phase == "upgrade":
            assert set(cabled[s.subject]) <= out, s.subject
            following = plan.steps[s.n:]
            nxt = next(t for t in following if t.phase in ("upgrade", "validate"))
            assert nxt.phase == "validate"  # validated before the next switch
    spines = [s for s in ups if s.subject.startswith("spine")]
    assert spines and all(not cabled[s.subject] for s in spines)  # a spine drains nobody


def test_an_unmanaged_switch_is_flashed_and_reset_through_the_fabric() -> None:
    old, new = _pinned(switch=OLD_SW, switch_model="QM8790"), _pinned(switch=NEW_SW, switch_model="QM8790")
    plan = _plan(old, new)
    assert _check(plan, old, new) == []
    assert not any(s.phase == "upgrade" for s in plan.steps)
    flashes = [s for s in plan.steps if s.phase == "flash"]
    assert len(flashes) == len(old["switches"])
    for s in flashes:
        sw = s.argv[s.argv.index("--switch") + 1]
        act = plan.steps[s.n]  # the next step
        assert act.phase == "activate" and act.argv[act.argv.index("--switch") + 1] == sw
        assert act.argv[act.argv.index("--how") + 1] == "swreset"
        check = next(t for t in plan.steps[act.n:] if t.phase == "validate")  # that switch's firmware alone
        last = check.argv == ("clusterforge", "validate", check.argv[2])  # the plan's last: everything, all bumped
        assert last or check.argv[check.argv.index("--switch") + 1] == sw, check.argv


def test_a_switch_activated_like_a_card_is_rejected() -> None:
    old, new = _pinned(switch=OLD_SW, switch_model="QM8790"), _pinned(switch=NEW_SW, switch_model="QM8790")
    plan = _plan(old, new)
    act = next(s for s in plan.steps if s.phase == "activate")
    argv = list(act.argv)
    argv[argv.index("--how") + 1] = "mlxfwreset"
    wrong = dataclasses.replace(act, argv=tuple(argv))
    found = _rules(_check(_with(plan, [wrong if s is act else s for s in plan.steps]), old, new))
    sw = act.subject
    assert any(f"FIRMWARE: {sw}'s firmware is activated by mlxfwreset: a switch by swreset" in f for f in found), found


# -- the verifier: hand-broken plans --------------------------------------------------------------------
def _rules(found: list[Violation]) -> list[str]:
    return [f"{v.rule}: {v.message}" for v in found]


def test_a_flash_of_a_host_in_service_is_rejected() -> None:
    old, new, plan = _hca_bump()
    steps = [s for s in plan.steps if not (s.phase == "drain" and s.subject == "gpu01")]
    found = _rules(_check(_with(plan, steps), old, new))
    assert any("FIRMWARE: gpu01 is flashed while in service" in f for f in found), found


def test_a_validation_before_the_activation_is_rejected() -> None:
    old, new, plan = _hca_bump()
    first = next(s for s in plan.steps if s.phase == "activate")
    steps = [s for s in plan.steps if s is not first]
    found = _rules(_check(_with(plan, steps), old, new))
    assert any(f.startswith("FIRMWARE:") and "validated before the new firmware (ConnectX-6) is activated" in f
               for f in found), found
    moved = list(plan.steps)  # activation after the validation: the same
    val = next(i for i, s in enumerate(moved) if s.phase == "validate" and s.n > first.n)
    moved.insert(val + 1, moved.pop(first.n - 1))
    assert any("validated before the new firmware" in f for f in _rules(_check(_with(plan, moved), old, new)))


def test_a_resume_before_the_validation_is_rejected() -> None:
    old, new, plan = _hca_bump()
    steps = list(plan.steps)
    val = next(i for i, s in enumerate(steps) if s.phase == "validate")
    steps.append(steps.pop(val))  # the first wave's validation moved after every resume
    found = _rules(_check(_with(plan, steps), old, new))
    assert any(f.startswith("RESUME:") and "before a validation that covers it" in f for f in found), found


def test_a_downgrade_flash_is_rejected_without_the_policy() -> None:
    old, allowed = _pinned(), _pinned("20.38.1002", allow=True)
    plan = _plan(old, allowed)
    refused = _pinned("20.38.1002")  # the same plan against an inventory that does not allow it
    found = _rules(_check(plan, old, refused))
    assert any("FIRMWARE: ConnectX-6 20.39.2048 -> 20.38.1002 is a downgrade and the new inventory does not allow"
               in f for f in found), found
    bare = _with(plan, [dataclasses.replace(s, argv=tuple(a for a in s.argv if a != "--allow-downgrade"))
                        for s in plan.steps])
    found = _rules(_check(bare, old, allowed))
    assert any("the flash must say --allow-downgrade" in f for f in found), found


def test_a_flash_to_another_version_or_without_its_flash_is_rejected() -> None:
    old, new, plan = _hca_bump()
    wrong = _with(plan, [dataclasses.replace(s, argv=tuple("20.41.1000" if a == NEW_HCA else a for a in s.argv))
                         for s in plan.steps])
    assert any("flashed to 20.41.1000, pinned 20.40.1000" in f for f in _rules(_check(wrong, old, new)))
    none = _with(plan, [s for s in plan.steps if s.phase not in ("flash", "activate")])
    found = _rules(_check(none, old, new))
    assert any(f.startswith("FIRMWARE: firmware never flashed and activated: ") for f in found), found


def test_a_dpu_reset_instead_of_its_reboot_is_rejected() -> None:
    old, new = _pinned(dpu="32.43.1014"), _pinned(NEW_HCA, dpu="32.44.1000")
    plan = _plan(old, new)
    steps = [dataclasses.replace(s, argv=(*s.argv[:s.argv.index("--how")], "--model", "BlueField-3", "--how",
                                          "mlxfwreset"))
             if s.phase == "activate" and "reboot" in s.argv else s for s in plan.steps]
    found = _rules(_check(_with(plan, steps), old, new))
    assert any("BlueField-3 firmware is activated by mlxfwreset, which it does not support (reboot)" in f
               for f in found), found


def test_two_switches_at_once_or_a_switch_with_live_nodes_are_rejected() -> None:
    old, new = _pinned(switch=OLD_SW), _pinned(switch=NEW_SW)
    plan = _plan(old, new)
    steps = list(plan.steps)
    first = next(i for i, s in enumerate(steps) if s.phase == "upgrade" and s.subject == "spine01")
    second = next(i for i, s in enumerate(steps) if s.phase == "upgrade" and s.subject == "spine02")
    steps.insert(first + 1, steps.pop(second))  # spine02 right after spine01, before spine01's validation
    found = _rules(_check(_with(plan, steps), old, new))
    assert any("FIRMWARE: switch spine02 is flashed while spine01 is not validated yet" in f for f in found), found
    leaf = next(s for s in plan.steps if s.phase == "upgrade" and s.subject == "leaf-su01-r0")
    wave = [s for s in plan.steps if s.n < leaf.n and s.phase == "drain"][-4:]  # the leaf's four nodes
    steps = [s for s in plan.steps if s not in wave]
    found = _rules(_check(_with(plan, steps), old, new))
    assert any(f.startswith("FIRMWARE: switch leaf-su01-r0 is flashed while gpu0") and "in service" in f
               for f in found), found


def test_a_managed_switch_flashed_by_a_machine_step_is_rejected() -> None:
    old, new = _pinned(switch=OLD_SW), _pinned(switch=NEW_SW)
    plan = _plan(old, new)
    up = next(s for s in plan.steps if s.phase == "upgrade" and s.subject == "spine01")
    machine = dataclasses.replace(up, phase="flash", argv=("clusterforge", "firmware", "flash", "inventories/lab",
                                                          "--switch", "spine01", "--model", "QM8700",
                                                          "--version", NEW_SW))
    found = _rules(_check(_with(plan, [machine if s is up else s for s in plan.steps]), old, new))
    assert any("spine01 (QM8700) is flashed from its switch OS: a manual upgrade step" in f for f in found), found


# -- the command ------------------------------------------------------------------------------------------
def test_diff_refuses_a_downgrade_in_one_line_naming_the_pin(tmp_path: Path) -> None:
    old_env, new_env = tmp_path / "old", tmp_path / "new"
    for env, version in ((old_env, OLD_HCA), (new_env, "20.38.1002")):
        shutil.copytree(LAB, env)
        (env / "firmware.yaml").write_text(yaml.safe_dump({"firmware": _pinned(version)["firmware"]}))
    result = CliRunner().invoke(app, ["diff", str(old_env), str(new_env)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output
    assert lines[0].startswith(f"diff: {new_env / 'firmware.yaml'}:")
    assert "firmware.hcas[0] (ConnectX-6): 20.39.2048 -> 20.38.1002 is a downgrade" in lines[0]
