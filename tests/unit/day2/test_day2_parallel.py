"""Parallel groups (issue #26, item 4): the planner marks a wave's drain and resume hooks, and its deploys,
as steps that may run at the same time (`parallel_group`); the verifier's PARALLEL rule proves them
independent; `apply` runs them together, journals each, reads the state once per group, and resumes after
a crash mid-group (journaled, and a real kill -9 of `clusterforge apply`) with only the group's unfinished
steps."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from _day2_util import LAB, index_of, lab_data, plan_for
from typer.testing import CliRunner

from clusterforge.cli.main import app
from clusterforge.day2 import ChangePlan
from clusterforge.day2.apply import Effects, Options, State, apply_plan
from clusterforge.day2.journal import Journal
from clusterforge.day2.planfile import PlanFile
from clusterforge.day2.steps import Step
from clusterforge.day2.verify import verify

DRAIN = ["scontrol", "update", "nodename={host}", "state=drain", "reason=clusterforge"]
RESUME = ["scontrol", "update", "nodename={host}", "state=resume"]


def _driver(cap: int = 100) -> tuple[dict[str, Any], ChangePlan]:
    data = lab_data()
    data["software"]["nvidia_driver"] = "550.127.05"
    data["deploy"]["reboot"] = {"mode": "rolling-by-rack", "drain": DRAIN, "resume": RESUME}
    data["deploy"]["max_drain"] = {"rack_percent": cap, "cluster_percent": cap}
    return data, plan_for(data)


def _with(plan: ChangePlan, steps: list[Step]) -> ChangePlan:
    return dataclasses.replace(plan, steps=tuple(dataclasses.replace(s, n=i + 1) for i, s in enumerate(steps)))


def test_a_waves_hooks_and_deploys_are_marked_to_run_together() -> None:
    data, plan = _driver()
    assert verify(plan, index_of(lab_data()), index_of(data)) == []
    groups: dict[int, list[Step]] = {}
    for s in plan.steps:
        if s.group is not None:
            groups.setdefault(s.group, []).append(s)
    gpus = [f"gpu0{i}" for i in range(1, 9)]
    drains, deploys, resumes = groups.values()
    assert [s.subject for s in drains] == gpus and {s.phase for s in drains} == {"drain"}
    assert drains[0].n == drains[0].group == 1  # a group is named by its first step
    assert [s.phase for s in deploys] == ["deploy", "deploy"]  # the GPU nodes' driver, sm01's monitoring
    assert [s.subject for s in resumes] == gpus and {s.phase for s in resumes} == {"resume"}
    assert [s.group for s in plan.steps if s.phase == "validate"] == [None]
    assert "(parallel group 1)" in plan.lines()[2]
    # a step carries its group through the plan file
    assert [Step.from_dict(s.to_dict()) for s in plan.steps] == list(plan.steps)
    # within the caps (4 of 8 at once): each wave's four drains, and four resumes, go together
    data, plan = _driver(cap=50)
    assert verify(plan, index_of(lab_data()), index_of(data)) == []
    sizes = [(s.phase, len([x for x in plan.steps if x.group == s.n])) for s in plan.steps if s.group == s.n]
    assert sizes == [("drain", 4), ("deploy", 2), ("resume", 4), ("drain", 4), ("resume", 4)]


def test_a_manual_step_runs_alone() -> None:
    with pytest.raises(ValueError, match="runs alone"):
        Step.from_dict({"n": 1, "phase": "takeout", "rack": None, "subject": "sm01", "action": "out",
                        "argv": [], "manual": True, "parallel_group": 1})
    with pytest.raises(ValueError, match="parallel_group"):
        Step.from_dict({"n": 1, "phase": "drain", "rack": None, "subject": "gpu01", "action": "drain",
                        "argv": ["true"], "parallel_group": "1"})


def test_the_verifier_rejects_groups_whose_steps_depend_on_each_other() -> None:
    data, plan = _driver()
    old, new = index_of(lab_data()), index_of(data)
    steps = list(plan.steps)
    drains = [i for i, s in enumerate(steps) if s.phase == "drain"]
    deploys = [i for i, s in enumerate(steps) if s.phase == "deploy"]

    def rules(bad: list[Step]) -> list[str]:
        return [f"{v.rule}: {v.message}" for v in verify(_with(plan, bad), old, new) if v.rule == "PARALLEL"]

    # the last drain and the first deploy in one group: a deploy that disrupts a host may not race its drain
    mixed = list(steps)
    mixed[deploys[0]] = dataclasses.replace(steps[deploys[0]], group=steps[drains[0]].group)
    assert any("mixes" in r for r in rules(mixed))
    # a group split by another step
    split = list(steps)
    split.insert(drains[3], dataclasses.replace(steps[-1], group=None))
    assert any("not one run" in r for r in rules(split))
    # two deploys of one group over the same host
    twice = list(steps)
    argv = list(steps[deploys[1]].argv)
    argv[argv.index("--limit") + 1] = "gpu01,sm01"
    twice[deploys[1]] = dataclasses.replace(steps[deploys[1]], argv=tuple(argv))
    assert any("share host(s) gpu01" in r for r in rules(twice))
    # a subnet manager's drain hook in a group: its HA checks depend on the order
    sm = list(steps)
    sm.insert(drains[1], dataclasses.replace(steps[drains[0]], subject="sm01", argv=("true",)))
    assert any("sm01 not compute" in r for r in rules(sm))
    assert rules(steps) == []


# -- apply ------------------------------------------------------------------------------------------------


def _plan_file(tmp_path: Path, steps: list[Step]) -> PlanFile:
    doc = {"digest": "sha256:test", "meta": {"env": "lab", "env_path": str(tmp_path),
                                             "inventories": {"new": {"model": "m0"}},
                                             "record": {"dir": str(tmp_path / "state"), "digest": "r0"}}}
    return PlanFile(tmp_path / "plan.json", doc, tuple(steps))


def _group_plan(tmp_path: Path, n: int = 4) -> PlanFile:
    steps = [Step(i + 1, "drain", "r1", f"gpu0{i + 1}", "drain", ("drain", f"gpu0{i + 1}"), group=1)
             for i in range(n)]
    steps.append(Step(n + 1, "validate", None, "all", "validate", ("clusterforge", "validate", "lab")))
    return _plan_file(tmp_path, steps)


class _World:
    """A deploy record that each finished step changes, and the steps' runs (concurrency seen by a barrier)."""

    def __init__(self, together: int) -> None:
        self.record = 0
        self.lock = threading.Lock()
        self.ran: list[int] = []
        self.reads = 0
        self.barrier = threading.Barrier(together, timeout=10)
        self.fail: set[int] = set()

    def run(self, step: Step) -> tuple[int, str]:
        if step.group is not None:
            self.barrier.wait()  # every step of the group is running at once, or this times out
        with self.lock:
            self.ran.append(step.n)
            self.record += 1
        return (3, f"step {step.n} broke") if step.n in self.fail else (0, "")

    def state(self, prev: State | None) -> State:
        self.reads += 1
        return State("m0", f"r{self.record}" if self.record else "r0")

    def effects(self) -> Effects:
        return Effects(run=self.run, ask=lambda s: True, state=self.state, echo=lambda line: None)


def test_apply_runs_a_group_at_once_and_reads_the_state_once(tmp_path: Path) -> None:
    plan = _group_plan(tmp_path)
    journal = Journal.open(tmp_path / "plan.json.journal", plan.digest)
    world = _World(together=4)
    outcome = apply_plan(plan, journal, Options(parallel=4), world.effects())
    assert outcome.status == "done", outcome.message
    assert sorted(world.ran) == [1, 2, 3, 4, 5] and world.ran[-1] == 5
    assert world.reads == 3  # before the group, once the group has ended, after step 5
    events = [(e["n"], e["event"]) for e in Journal.open(journal.path, plan.digest).entries]
    assert sorted(e for e in events if e[1] in ("start", "done") and e[0] < 5) == sorted(
        [(n, "start") for n in range(1, 5)] + [(n, "done") for n in range(1, 5)])
    assert events[-3][1] == "joined" and events[-2:] == [(5, "start"), (5, "done")]
    assert Journal.open(journal.path, plan.digest).interrupted() is None


def test_parallel_one_runs_the_group_one_after_the_other(tmp_path: Path) -> None:
    plan = _group_plan(tmp_path)
    journal = Journal.open(tmp_path / "plan.json.journal", plan.digest)
    world = _World(together=1)
    assert apply_plan(plan, journal, Options(parallel=1), world.effects()).status == "done"
    assert world.ran == [1, 2, 3, 4, 5]


def test_a_failure_in_a_group_lets_the_others_finish_and_is_retried_alone(tmp_path: Path) -> None:
    plan = _group_plan(tmp_path)
    journal = Journal.open(tmp_path / "plan.json.journal", plan.digest)
    world = _World(together=4)
    world.fail = {3}
    outcome = apply_plan(plan, journal, Options(), world.effects())
    assert outcome.status == "failed" and outcome.step == 3 and "step 3 broke" in outcome.message
    assert sorted(world.ran) == [1, 2, 3, 4] and sorted(outcome.ran) == [1, 2, 4]
    world.fail, world.ran, world.barrier = set(), [], threading.Barrier(1)
    journal = Journal.open(journal.path, plan.digest)
    outcome = apply_plan(plan, journal, Options(), world.effects())
    assert outcome.status == "done" and world.ran == [3, 5]


@pytest.mark.parametrize("crash", ["mid-group", "before-joined"])
def test_a_crash_mid_group_reruns_only_its_unfinished_steps(tmp_path: Path, crash: str) -> None:
    """SIGKILL while a group runs: steps 2 and 4 finished (their `done` written), 1 and 3 started and never
    ended (or every step finished, but the group's state was never recorded). The deploy record moved on
    meanwhile: that is the group's own doing, not a stale plan; only the unfinished steps run again."""
    plan = _group_plan(tmp_path)
    journal = Journal.open(tmp_path / "plan.json.journal", plan.digest)
    for n in (1, 2, 3, 4):
        journal.record(n, "start")
    for n in (2, 4) if crash == "mid-group" else (1, 2, 3, 4):
        journal.record(n, "done", how="ran")
    journal = Journal.open(journal.path, plan.digest)
    assert journal.interrupted() == 1  # started and never ended, or ended in a group never joined
    world = _World(together=2 if crash == "mid-group" else 1)
    world.record = 7  # what the killed run's steps left in the record
    messages: list[str] = []
    fx = dataclasses.replace(world.effects(), echo=messages.append)
    outcome = apply_plan(plan, journal, Options(), fx)
    assert outcome.status == "done", outcome.message
    assert sorted(world.ran) == ([1, 3, 5] if crash == "mid-group" else [5])
    assert any("was interrupted" in m for m in messages)
    # without the crash, the same change is somebody else's: stale
    fresh = Journal.open(tmp_path / "other.journal", plan.digest)
    assert apply_plan(plan, fresh, Options(), world.effects()).status == "stale"


# -- a real SIGKILL mid-group -----------------------------------------------------------------------------

SLOW_HOOK = """\
import os, sys, time, pathlib
log, flag, what, host = sys.argv[1:5]
def w(line):
    with open(log, "a") as fh:
        fh.write(line + "\\n")
w(f"start {what} {host} {os.getpid()}")
time.sleep(120 if pathlib.Path(flag).exists() and host in ("gpu02", "gpu04") else 0)
w(f"end {what} {host}")
"""


def test_sigkill_mid_group_then_apply_again_reruns_only_the_unfinished_hooks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`clusterforge apply` as a process, the four drain hooks of a rack whose cooling changes in one group:
    two end, two hang; kill -9 the apply. The next apply runs only the two that never ended, then waits at
    the first manual step."""
    monkeypatch.setenv("CLUSTERFORGE_LAB_ROOT", str(tmp_path / "labroot"))
    monkeypatch.setenv("CLUSTERFORGE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    log, flag, script = tmp_path / "hooks.log", tmp_path / "slow", tmp_path / "hook.py"
    script.write_text(SLOW_HOOK)
    old, new = tmp_path / "old", tmp_path / "lab"
    for d in (old, new):
        shutil.copytree(LAB, d)
        (d / "monitoring.yaml").unlink()
        services = d / "services.yaml"
        head, _, _ = services.read_text().partition("deploy:\n")
        hook = [sys.executable, str(script), str(log), str(flag)]
        services.write_text(head + "deploy:\n  reboot:\n"
                            f"    drain: {json.dumps([*hook, 'drain', '{host}'])}\n"
                            f"    resume: {json.dumps([*hook, 'resume', '{host}'])}\n")
    site = new / "site.yaml"  # the rack's cooling changes: its four nodes out together
    text = site.read_text()
    row = "{name: lab-su01-r01, row: row-a, position: 1, cooling: air}"
    assert row in text
    site.write_text(text.replace(row, row.replace("cooling: air", "cooling: cold-plate, leak_sensors: 2")))
    plan = tmp_path / "plan.json"
    result = CliRunner().invoke(app, ["diff", str(old), str(new), "--output", str(plan)])
    assert result.exit_code == 0, result.output
    steps = json.loads(plan.read_text())["steps"]
    assert [(s["phase"], s["parallel_group"]) for s in steps[:4]] == [("drain", 1)] * 4
    assert steps[4]["manual"]
    flag.touch()
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from clusterforge.cli.entry import main; "
                             "sys.exit(main())", "apply", str(plan), "--parallel", "4"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    hung: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            seen = log.read_text().splitlines() if log.exists() else []
            if len([x for x in seen if x.startswith("start")]) == 4 and len(
                    [x for x in seen if x.startswith("end")]) == 2:
                break
            time.sleep(0.1)
        hung = [int(x.split()[3]) for x in seen if x.startswith("start") and x.split()[2] in ("gpu02", "gpu04")]
        assert len(hung) == 2, seen
        time.sleep(0.5)  # the two ended hooks' `done` lines are journaled
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in hung:  # the hooks the killed apply left behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    flag.unlink()
    log.write_text("")
    again = CliRunner().invoke(app, ["apply", str(plan)])
    assert again.exit_code == 1 and "stopped before step 5" in again.output, again.output
    assert "resuming: 2 of 13 steps done" in again.output  # the two hooks that ended before the kill
    assert sorted(x for x in log.read_text().splitlines() if x.startswith("end")) == [
        "end drain gpu02", "end drain gpu04"]
    journal = Journal.open(plan.with_name("plan.json.journal"), json.loads(plan.read_text())["digest"])
    assert sorted(journal.done()) == [1, 2, 3, 4] and journal.interrupted() is None
