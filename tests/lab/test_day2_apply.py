"""Day-2 end to end on the lab: `diff --output` then `apply --lab-technician`, for real.

A copy of the lab inventory on its own subnet and lab root (a developer's lab is left alone), its
drain/resume hooks pointed at the copy, GUIDs learned once, the monitoring server sm01 deployed.
Then, on the running lab:

* a node's HCA port re-cabled to another leaf port; the first apply stops at validation (a fault
  injected elsewhere), the re-run after `lab heal` resumes there without redoing the cable work;
* an OpenSM change: its deploy step runs through apply, and a plan made before that deploy is then
  refused as stale (the deploy record changed);
* a stale plan (the inventory edited after planning) refused with exit 2, accepted again once the
  edit is undone;
* a failed leaf replaced by a new unit (its GUID lock dropped: a new GUID, learned by the plan); the
  apply is killed mid-way (SIGKILL) and the re-run finishes from the journal, never repeating a step.

Each ends in a clean validation (the plan's own validate step, its output checked). Run under the
shared lab lock: `flock /tmp/cf-lab.lock .venv/bin/python -m pytest -m lab tests/lab/test_day2_apply.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cf_lab_net import cf, lab_copy, own_network
from clusterforge.lab.netfile import parse_netfile
from clusterforge.rehearsal.env import paths

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.lab
CF = str(Path(sys.executable).parent / "clusterforge")


def journal(plan: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in Path(f"{plan}.journal").read_text().splitlines()[1:]]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, container_tools: None) -> Iterator[Path]:
    with lab_copy(tmp_path_factory, ROOT / "inventories" / "lab", "dayapply", edit=own_network) as env:
        mp = pytest.MonkeyPatch()
        mp.chdir(env.parent)  # apply's deploy steps write out/dayapply/ here
        try:
            code, out = cf("learn", str(env))  # the as-built GUIDs, locked (replacements show as a lock change)
            assert code == 0, out
            # the monitoring server as deployed (its apt source is the lab repository): a plan's monitoring-only
            # deploy step then finds the packages, as on a cluster that was deployed before day 2
            code, out = cf("deploy", str(env), "--limit", "sm01")
            assert code == 0, out
            yield env
        finally:
            mp.undo()


def state_dir(env: Path) -> Path:
    return paths(env).state_dir


def snapshot(env: Path, name: str) -> Path:
    old = env.parent / name
    shutil.copytree(env, old)
    return old


def technician_ops(env: Path) -> list[tuple[str, object, object]]:
    """What the lab technician did, ports named by node description (ibsim ids follow the GUIDs)."""
    net = parse_netfile(paths(env).netfile)

    def name(ep: object) -> object:
        return [net.nodes[ep[0]].desc, ep[1]] if isinstance(ep, list) else ep

    path = state_dir(env) / "technician.json"
    entries = json.loads(path.read_text()) if path.exists() else []
    return [(e["op"], name(e.get("a")), name(e.get("b")) or e.get("guid")) for e in entries]


def test_recable_a_node_port_resume_after_a_failed_validation(lab: Path) -> None:
    old = snapshot(lab, "asbuilt-a")
    fabric = lab / "fabric.yaml"
    fabric.write_text(fabric.read_text().replace("b: leaf-su01-r0/1,", "b: leaf-su01-r0/5,"))
    plan = lab.parent / "recable.json"
    code, out = cf("diff", str(old), str(lab), "--output", str(plan))
    assert code == 0, out
    steps = json.loads(plan.read_text())["steps"]
    assert [(s["phase"], s["subject"]) for s in steps] == [
        ("drain", "gpu01"), ("unplug", "C-00001"), ("plug", "C-00001"), ("deploy", "sm01"),
        ("validate", "fabric and hosts"), ("resume", "gpu01")]
    # the moved cable relabels the port's series: sm01's scrape config follows (a monitoring-only deploy)
    deploy = next(s for s in steps if s["phase"] == "deploy")
    assert "--component" in deploy["argv"] and deploy["argv"][deploy["argv"].index("--component") + 1] == "monitoring"
    # somebody else's cable is pulled: the plan's validation fails, apply stops there
    code, out = cf("lab", "fault", "remove", "C-00010", "--env", str(lab))
    assert code == 0, out
    code, out = cf("apply", str(plan), "--lab-technician")
    assert code == 1, out
    assert "step 5 failed (exit 4)" in out and "FAB-PORT-DOWN" in out, out
    assert [(e["n"], e["event"]) for e in journal(plan)] == [
        (1, "start"), (1, "done"), (2, "done"), (3, "done"), (4, "start"), (4, "done"), (5, "start"), (5, "failed")]
    code, out = cf("lab", "heal", "--env", str(lab))
    assert code == 0, out
    code, out = cf("apply", str(plan), "--lab-technician")
    assert code == 0, out
    assert "resuming: 4 of 6 steps done" in out and "clean: the fabric and hosts match" in out
    done = [e["n"] for e in journal(plan) if e["event"] == "done"]
    assert done == [1, 2, 3, 4, 5, 6]
    # the cable work was done once, and where the plan said
    gpu = ["gpu01 mlx5_0", 1]
    assert technician_ops(lab) == [("unplug", gpu, ["leaf-su01-r0", 1]), ("plug", gpu, ["leaf-su01-r0", 5])]
    drained = json.loads((state_dir(lab) / "drained.json").read_text())
    assert drained["drained"] == []
    assert [(e["host"], e["event"]) for e in drained["events"]] == [("gpu01", "drain"), ("gpu01", "resume")]
    ops = json.loads((state_dir(lab) / "technician.json").read_text())
    assert drained["events"][0]["when"] < ops[0]["when"] < ops[1]["when"] < drained["events"][1]["when"]


def test_a_deploy_step_runs_and_makes_a_plan_made_before_it_stale(lab: Path) -> None:
    """The OpenSM push (`deploy --limit sm01 --component opensm`) runs through apply; the record it writes
    is carried by the journal, and a second plan made before that deploy is refused as stale."""
    old = snapshot(lab, "asbuilt-sm")
    services = lab / "services.yaml"
    services.write_text(services.read_text().replace("priority: 15", "priority: 14"))
    plan, other = lab.parent / "sm.json", lab.parent / "sm-other.json"
    for path in (plan, other):
        code, out = cf("diff", str(old), str(lab), "--output", str(path))
        assert code == 0, out
    steps = json.loads(plan.read_text())["steps"]
    assert [(s["phase"], s["argv"][1:2]) for s in steps] == [("fabric", ["deploy"]), ("validate", ["validate"])]
    code, out = cf("apply", str(plan))
    assert code == 0, out
    assert "sm01  changed" in out and "clean: the fabric and hosts match the inventory" in out
    planned = json.loads(plan.read_text())["meta"]["record"]["digest"]
    after = [e["state"]["record"] for e in journal(plan) if e["event"] == "done"]  # type: ignore[index]
    assert after[0] != planned and after[1] == after[0]  # the deploy wrote the record; validate did not
    code, out = cf("apply", str(other))
    assert code == 2
    assert f"the deploy record in {state_dir(lab).resolve()} changed since the plan was made" in out


def test_a_stale_plan_is_refused(lab: Path) -> None:
    old = snapshot(lab, "asbuilt-stale")
    guids = lab / "guids.generated.yaml"
    built = guids.read_text()
    guids.write_text("".join(line for line in built.splitlines(keepends=True)
                             if not line.startswith("    leaf-su02-r1: ")))
    plan = lab.parent / "stale.json"
    code, out = cf("diff", str(old), str(lab), "--output", str(plan))
    assert code == 0, out
    nodes = lab / "nodes.yaml"
    listed = nodes.read_text()
    nodes.write_text(listed.replace("{name: gpu08, rack: lab-su02-r01, u: 14",
                                    "{name: gpu08, rack: lab-su02-r01, u: 18"))
    code, out = cf("apply", str(plan), "--lab-technician")
    assert code == 2
    assert "the plan is stale" in out and "changed since the plan was made" in out
    assert not Path(f"{plan}.journal").exists()
    nodes.write_text(listed)  # undone: the plan is what it was reviewed against again
    code, out = cf("apply", str(plan), "--dry-run", "--lab-technician")
    assert code == 0, out
    guids.write_text(built)


def test_replace_a_leaf_killed_mid_way_then_resumed(lab: Path) -> None:
    old = snapshot(lab, "asbuilt-b")
    guids = lab / "guids.generated.yaml"
    before = guids.read_text()
    old_guid = next(line.split("'")[1] for line in before.splitlines() if line.startswith("    leaf-su01-r1: "))
    guids.write_text("".join(line for line in before.splitlines(keepends=True)
                             if not line.startswith("    leaf-su01-r1: ")))  # the unit was swapped: learn it
    plan = lab.parent / "replace.json"
    code, out = cf("diff", str(old), str(lab), "--output", str(plan))
    assert code == 0, out
    steps = json.loads(plan.read_text())["steps"]
    n = {(s["phase"], s["subject"]): s["n"] for s in steps}
    assert n[("remove", "leaf-su01-r1")] < n[("install", "leaf-su01-r1")] < n[("learn", "leaf-su01-r1")]
    unplugs = [s["n"] for s in steps if s["phase"] == "unplug"]
    assert len(unplugs) == 8  # 4 nodes, 4 uplinks
    ops_before = len(technician_ops(lab))
    # kill apply (and whatever it runs) once it is half-way through the unplugging
    proc = subprocess.Popen([CF, "apply", str(plan), "--lab-technician"], cwd=lab.parent, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if Path(f"{plan}.journal").exists() and any(e["event"] == "done" and e["n"] == unplugs[3]
                                                     for e in journal(plan)):
            break
        time.sleep(0.05)
    assert proc.poll() is None, "apply finished before it could be interrupted"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    done_before = [e["n"] for e in journal(plan) if e["event"] == "done"]
    assert unplugs[3] in done_before and len(done_before) < len(steps)
    code, out = cf("apply", str(plan), "--lab-technician")
    assert code == 0, out
    assert f"resuming: {len(done_before)} of {len(steps)} steps done" in out
    assert "clean: the fabric and hosts match the inventory" in out
    done = [e["n"] for e in journal(plan) if e["event"] == "done"]
    assert sorted(done) == list(range(1, len(steps) + 1))  # each step finished exactly once
    # in plan order, but for a parallel group's steps (a wave's drain hooks), which end as they end
    group = {s["n"]: s.get("parallel_group") or s["n"] for s in steps}
    assert [group[d] for d in done] == sorted(group[d] for d in done)
    ops = technician_ops(lab)[ops_before:]
    assert sorted(op for op, _, _ in ops) == ["guid"] + ["plug"] * 8 + ["unplug"] * 8
    new_guid = next(g for op, _, g in ops if op == "guid")
    learned = guids.read_text()
    assert f"leaf-su01-r1: '{new_guid}'" in learned and old_guid not in learned
    drained = json.loads((state_dir(lab) / "drained.json").read_text())
    assert drained["drained"] == []
    assert sorted({str(e["host"]) for e in drained["events"]}) == ["gpu01", "gpu02", "gpu03", "gpu04"]


def test_lab_cable_commands(lab: Path) -> None:
    """The technician by hand: a cable moved to another leaf port and back, pulled and plugged again; the
    fabric converges to each (the commands wait for ibnetdiscover to show it)."""
    env = ["--env", str(lab)]
    ops_before = len(technician_ops(lab))
    code, out = cf("lab", "cable", "move", "gpu02/mlx5_0/1", "leaf-su01-r0/6", *env)
    assert code == 0, out
    assert "moved gpu02/mlx5_0/1: leaf-su01-r0 port 2 -> leaf-su01-r0/6" in out
    code, out = cf("lab", "cable", "move", "gpu02/mlx5_0/1", "leaf-su01-r0/2", *env)
    assert code == 0, out
    code, out = cf("lab", "cable", "unplug", "leaf-su01-r0/2", *env)
    assert code == 0 and "it went to gpu02 mlx5_0 port 1" in out, out
    code, out = cf("lab", "cable", "plug", "gpu02/mlx5_0/1", "leaf-su01-r0/2", *env)
    assert code == 0, out
    assert [op for op, _, _ in technician_ops(lab)[ops_before:]] == ["unplug", "plug"] * 3
    code, out = cf("lab", "cable", "plug", "gpu02/mlx5_0/1", "leaf-su01-r0/3", *env)
    assert code == 1 and "is in use" in out
    code, out = cf("lab", "cable", "unplug", "gpu02:mlx5_0", *env)
    assert code == 2 and "is not a port" in out
    code, out = cf("lab", "drain", "gpu99", *env)
    assert code == 1 and "no host 'gpu99' in this lab" in out
