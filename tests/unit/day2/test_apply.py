"""`diff --output` plan files and `clusterforge apply` without a lab: digests, staleness, the journal,
--confirm-through, --dry-run. Machine steps run for real only where they are harmless (a drain hook
that appends to a file); elsewhere the runner is replaced and records what it was asked to run."""

from __future__ import annotations

import itertools
import json
import shutil
import sys
from pathlib import Path

import pytest
from _day2_util import LAB
from typer.testing import CliRunner

from clusterforge.cli import apply as apply_cli
from clusterforge.cli.main import app
from clusterforge.day2.apply import Effects, Options, State, StepFailed, apply_plan, planned_state
from clusterforge.day2.journal import Journal, JournalError, journal_path
from clusterforge.day2.planfile import (
    TOOL,
    PlanFileError,
    canonical,
    document_digest,
    read_plan_file,
    record_digest,
)
from clusterforge.day2.steps import Step

HOOK = ("import sys, pathlib; p = pathlib.Path(sys.argv[1]); "
        "p.write_text((p.read_text() if p.exists() else '') + sys.argv[2] + ' ' + sys.argv[3] + '\\n'); "
        "print('hook:', sys.argv[2], sys.argv[3])")


@pytest.fixture()
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Old and new copies of the lab inventory (gpu01's rail-0 cable moved to leaf port 5), their drain and
    resume hooks a harmless recorder, no lab, the deploy record in tmp; and the plan file."""
    monkeypatch.setenv("CLUSTERFORGE_LAB_ROOT", str(tmp_path / "labroot"))
    monkeypatch.setenv("CLUSTERFORGE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    hooks = tmp_path / "hooks.log"
    old, new = tmp_path / "old", tmp_path / "lab"
    for d in (old, new):
        shutil.copytree(LAB, d)
        # no monitoring section: the moved cable would also relabel the monitoring server's scrape config (one
        # more deploy step, see test_day2_plan); these tests are about apply's steps, not that one
        (d / "monitoring.yaml").unlink()
        services = d / "services.yaml"
        text = services.read_text()
        head, _, _ = text.partition("deploy:\n")
        hook = [sys.executable, "-c", HOOK, str(hooks)]
        services.write_text(head + "deploy:\n  reboot:\n"
                            f"    drain: {json.dumps([*hook, 'drain', '{host}'])}\n"
                            f"    resume: {json.dumps([*hook, 'resume', '{host}'])}\n")
    fabric = new / "fabric.yaml"
    fabric.write_text(fabric.read_text().replace("b: leaf-su01-r0/1,", "b: leaf-su01-r0/5,"))
    plan = tmp_path / "plan.json"
    result = CliRunner().invoke(app, ["diff", str(old), str(new), "--output", str(plan)])
    assert result.exit_code == 0, result.output
    return {"old": old, "new": new, "plan": plan, "hooks": hooks, "tmp": tmp_path}


def cf(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def phases(plan: Path) -> list[tuple[int, str, bool]]:
    return [(s["n"], s["phase"], s["manual"]) for s in json.loads(plan.read_text())["steps"]]


# -- the plan file -------------------------------------------------------------------------------------


def test_plan_file_carries_meta_and_a_digest_over_everything(world: dict[str, Path]) -> None:
    doc = json.loads(world["plan"].read_text())
    meta = doc["meta"]
    assert meta["format"] == 1 and meta["tool"] == TOOL
    assert meta["env_path"] == str(world["new"].resolve())
    assert meta["inventories"]["old"]["path"] == str(world["old"].resolve())
    assert meta["inventories"]["new"]["model"] != meta["inventories"]["old"]["model"]  # they differ by a cable
    assert meta["record"]["dir"] == str((world["tmp"] / "state" / "lab").resolve())
    assert meta["record"]["digest"] == record_digest(world["tmp"] / "state" / "lab")
    assert doc["digest"] == document_digest(doc)
    assert phases(world["plan"]) == [(1, "drain", False), (2, "unplug", True), (3, "plug", True),
                                     (4, "validate", False), (5, "resume", False)]
    assert len(read_plan_file(world["plan"]).steps) == 5


@pytest.mark.parametrize("edit", ["action", "argv", "meta"])
def test_an_edited_plan_is_refused(world: dict[str, Path], edit: str) -> None:
    doc = json.loads(world["plan"].read_text())
    if edit == "action":
        doc["steps"][1]["action"] = "leave it"
    elif edit == "argv":
        doc["steps"][0]["argv"] = ["sh", "-c", "reboot"]
    else:
        doc["meta"]["record"]["digest"] = "sha256:0"
    world["plan"].write_text(json.dumps(doc))
    code, out = cf("apply", str(world["plan"]), "--dry-run")
    assert code == 2
    assert "edited after it was made" in out
    assert not journal_path(world["plan"]).exists()


def test_a_plan_of_another_version_or_format_is_refused(world: dict[str, Path]) -> None:
    doc = json.loads(world["plan"].read_text())
    doc["meta"]["tool"] = "clusterforge 0.0.9"
    doc["digest"] = document_digest(doc)  # a whole plan, only from another version
    world["plan"].write_text(json.dumps(doc))
    code, out = cf("apply", str(world["plan"]))
    assert code == 2 and "made by clusterforge 0.0.9" in out
    doc["meta"]["format"] = 99
    doc["digest"] = document_digest(doc)
    world["plan"].write_text(json.dumps(doc))
    code, out = cf("apply", str(world["plan"]))
    assert code == 2 and "format 99" in out
    with pytest.raises(PlanFileError, match="not a plan file"):
        world["plan"].write_text(json.dumps({"steps": []}))
        read_plan_file(world["plan"])


def test_canonical_json_ignores_key_order_and_whitespace() -> None:
    assert canonical({"b": 1, "a": [1, {"y": 2, "x": 3}]}) == canonical({"a": [1, {"x": 3, "y": 2}], "b": 1})


# -- staleness -------------------------------------------------------------------------------------------


def test_an_inventory_edit_after_planning_makes_the_plan_stale(world: dict[str, Path]) -> None:
    nodes = world["new"] / "nodes.yaml"
    nodes.write_text(nodes.read_text().replace("{name: gpu08, rack: lab-su02-r01, u: 14",
                                               "{name: gpu08, rack: lab-su02-r01, u: 18"))
    code, out = cf("apply", str(world["plan"]), "--confirm-through", "5")
    assert code == 2
    assert f"the inventory {world['new']} changed since the plan was made" in out
    assert not world["hooks"].exists() and not journal_path(world["plan"]).exists()


def test_a_comment_is_not_a_change_that_matters(world: dict[str, Path]) -> None:
    nodes = world["new"] / "nodes.yaml"
    nodes.write_text(nodes.read_text() + "# gpu08 is due for a PSU swap\n")
    code, out = cf("apply", str(world["plan"]), "--dry-run")
    assert code == 0, out
    assert "dry run: 5 of 5 steps to do" in out


def test_a_deploy_since_planning_makes_the_plan_stale(world: dict[str, Path]) -> None:
    record = world["tmp"] / "state" / "lab"
    record.mkdir(parents=True)
    (record / "history.jsonl").write_text('{"when": "now", "engine": "pyinfra"}\n')
    code, out = cf("apply", str(world["plan"]))
    assert code == 2
    assert f"the deploy record in {record.resolve()} changed since the plan was made" in out


def test_an_invalid_inventory_is_stale_too(world: dict[str, Path]) -> None:
    (world["new"] / "nodes.yaml").write_text("nodes: [{name: gpu01}]\n")
    code, out = cf("apply", str(world["plan"]))
    assert code == 2 and "does not load now" in out


# -- running, confirming, resuming ---------------------------------------------------------------------


def test_machine_steps_run_manual_ones_wait(world: dict[str, Path]) -> None:
    """Step 1 (the drain hook) runs for real, argv as planned; apply stops before manual step 2."""
    code, out = cf("apply", str(world["plan"]))
    assert code == 1
    assert world["hooks"].read_text() == "drain gpu01\n"
    assert "stopped before step 2 of 5: it is manual (unplug) and not confirmed" in out
    assert "--confirm-through 2" in out
    journal = Journal.open(journal_path(world["plan"]), read_plan_file(world["plan"]).digest)
    assert sorted(journal.done()) == [1]


def test_confirm_through_then_resume_never_repeats_a_step(world: dict[str, Path],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[tuple[str, ...]] = []

    def fake_run(argv: tuple[str, ...], cwd: Path, echo: object, tag: str = "") -> tuple[int, str]:
        ran.append(argv)
        return (0, "ok\n") if argv[:2] != ("clusterforge", "validate") or len(ran) > 2 else (4, "FAB-PORT-DOWN\n")

    monkeypatch.setattr(apply_cli, "_run", fake_run)
    code, out = cf("apply", str(world["plan"]), "--confirm-through", "2")
    assert code == 1 and "stopped before step 3 of 5" in out
    assert [a[-2:] for a in ran] == [("drain", "gpu01")]
    # step 3 confirmed; validate (4) fails the first time: apply stops there with its output
    code, out = cf("apply", str(world["plan"]), "--confirm-through", "3")
    assert code == 1
    assert "step 4 failed (exit 4): clusterforge validate" in out and "FAB-PORT-DOWN" in out
    assert "resuming: 2 of 5 steps done" in out
    code, out = cf("apply", str(world["plan"]), "--confirm-through", "3")
    assert code == 0, out
    assert "resuming: 3 of 5 steps done" in out
    assert "all 5 steps done" in out
    assert [a[0] if a[0] == "clusterforge" else a[-2] for a in ran] == ["drain", "clusterforge", "clusterforge",
                                                                      "resume"]
    code, out = cf("apply", str(world["plan"]))  # nothing left: runs nothing
    assert code == 0 and len(ran) == 4
    events = [json.loads(line) for line in journal_path(world["plan"]).read_text().splitlines()]
    assert events[0]["plan"] == read_plan_file(world["plan"]).digest
    assert [(e["n"], e["event"]) for e in events[1:]] == [
        (1, "start"), (1, "done"), (2, "done"), (3, "done"), (4, "start"), (4, "failed"), (4, "start"),
        (4, "done"), (5, "start"), (5, "done")]
    assert events[3]["how"] == "confirmed by --confirm-through 2"


def test_format_json_stdout_is_one_document_while_a_step_prints(world: dict[str, Path]) -> None:
    """The drain hook (step 1) runs for real and prints: its lines go to stderr, stdout stays JSON."""
    result = CliRunner().invoke(app, ["apply", str(world["plan"]), "--format", "json"])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert (doc["status"], doc["step"], doc["ran"]) == ("waiting", 2, [1])
    assert "hook: drain gpu01" in result.stderr and "hook:" not in result.stdout
    code, out = cf("apply", str(world["plan"]), "--confirm-through", "2", "--dry-run")
    assert code == 0 and "resuming: 1 of " in out  # step 1 was journaled as done


def test_text_format_shows_a_steps_output(world: dict[str, Path]) -> None:
    result = CliRunner().invoke(app, ["apply", str(world["plan"])])
    assert result.exit_code == 1
    assert "    | hook: drain gpu01" in result.stdout


def test_dry_run_shows_every_step_and_changes_nothing(world: dict[str, Path]) -> None:
    code, out = cf("apply", str(world["plan"]), "--dry-run", "--confirm-through", "2")
    assert code == 0, out
    assert f"would run: {sys.executable} -c" in out
    assert "manual: confirmed by --confirm-through 2" in out
    assert "manual: would wait for the operator's confirmation" in out  # step 3
    assert f"would run: clusterforge validate {world['new']}" in out
    assert not world["hooks"].exists() and not journal_path(world["plan"]).exists()


def test_interactive_confirmation(world: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(apply_cli, "_run", lambda argv, cwd, echo, tag="": (0, ""))
    result = CliRunner().invoke(app, ["apply", str(world["plan"]), "--interactive"], input="y\nn\n")
    assert result.exit_code == 1
    assert "stopped before step 3" in result.output
    journal = Journal.open(journal_path(world["plan"]), read_plan_file(world["plan"]).digest)
    assert journal.done()[2]["how"] == "confirmed by the operator"


def test_lab_technician_needs_a_running_lab(world: dict[str, Path]) -> None:
    code, out = cf("apply", str(world["plan"]), "--lab-technician")
    assert code == 2 and "no lab is up" in out


# -- the journal -----------------------------------------------------------------------------------------


def test_journal_bound_to_its_plan_and_tolerates_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "p.json.journal"
    j = Journal.open(path, "sha256:aaa")
    j.record(1, "start")
    j.record(1, "done", how="ran", state={"model": "m", "record": "r"})
    with path.open("a") as fh:
        fh.write('{"n": 2, "event": "sta')  # a crash mid-write
    again = Journal.open(path, "sha256:aaa")
    assert sorted(again.done()) == [1] and again.interrupted() is None
    again.record(2, "start")  # the torn line is cut, not glued to
    assert [json.loads(x)["n"] for x in path.read_text().splitlines()[1:]] == [1, 1, 2]
    assert Journal.open(path, "sha256:aaa").interrupted() == 2
    with pytest.raises(JournalError, match="another plan"):
        Journal.open(path, "sha256:bbb")
    path.write_text("garbage\n{}\n")
    with pytest.raises(JournalError, match="not a journal line"):
        Journal.open(path, "sha256:aaa")


def test_a_crash_mid_step_reruns_that_step_and_accepts_what_it_changed(world: dict[str, Path]) -> None:
    """A step that began and never ended (kill -9, power loss) runs again; the record it may have
    written is taken as it is (it is that step's), not refused as stale."""
    plan = read_plan_file(world["plan"])
    journal = Journal.open(journal_path(world["plan"]), plan.digest)
    journal.record(1, "start")
    ran: list[int] = []
    changed = State("changed-model", "changed-record")

    def run(step: Step) -> tuple[int, str]:
        ran.append(step.n)
        return 0, ""

    fx = Effects(run=run, ask=lambda s: True, state=lambda prev: changed, echo=lambda line: None)
    outcome = apply_plan(plan, journal, Options(confirm_through=5), fx)
    assert outcome.status == "done" and ran == [1, 4, 5]
    # without the interruption, the same change is somebody else's: stale
    fresh = Journal.open(world["tmp"] / "other.journal", plan.digest)
    outcome = apply_plan(plan, fresh, Options(confirm_through=5), fx)
    assert outcome.status == "stale" and ran == [1, 4, 5]


def test_a_change_between_steps_stops_the_apply(world: dict[str, Path]) -> None:
    plan = read_plan_file(world["plan"])
    journal = Journal.open(journal_path(world["plan"]), plan.digest)
    # read before the apply and after step 1 (step 2, manual, starts from that), then before step 3: edited
    states = iter([planned_state(plan)] * 2 + [State("edited", planned_state(plan).record)] * 10)
    fx = Effects(run=lambda s: (0, ""), ask=lambda s: True, state=lambda prev: next(states), echo=lambda line: None)
    outcome = apply_plan(plan, journal, Options(confirm_through=5), fx)
    assert outcome.status == "stale" and outcome.step == 3
    assert sorted(journal.done()) == [1, 2]


def test_the_state_is_read_once_between_two_steps(world: dict[str, Path]) -> None:
    """Hashing the inventory and the deploy record is the costly part of a step's check: never twice in a row
    (the state a machine step left is what the next step starts from)."""
    plan = read_plan_file(world["plan"])
    journal = Journal.open(journal_path(world["plan"]), plan.digest)
    events: list[str] = []

    def state(prev: State | None) -> State:
        events.append("state")
        return planned_state(plan)

    def run(step: Step) -> tuple[int, str]:
        events.append(f"run {step.n}")
        return 0, ""

    def echo(line: str) -> None:
        if line.startswith("step "):
            events.append(line.split(" (")[0])

    fx = Effects(run=run, ask=lambda s: True, state=state, echo=echo)
    outcome = apply_plan(plan, journal, Options(confirm_through=len(plan.steps)), fx)
    assert outcome.status == "done"
    assert all((a, b) != ("state", "state") for a, b in itertools.pairwise(events)), events
    machine = [s for s in plan.steps if not s.manual]
    after_manual = [s for s in plan.steps[1:] if plan.steps[s.n - 2].manual]
    assert events.count("state") == 1 + len(machine) + len(after_manual), events


def test_a_lab_technician_failure_is_a_failed_step_retried_next_time(world: dict[str, Path]) -> None:
    plan = read_plan_file(world["plan"])
    journal = Journal.open(journal_path(world["plan"]), plan.digest)
    calls: list[int] = []

    def technician(step: Step) -> str:
        calls.append(step.n)
        if len(calls) == 1:
            raise StepFailed("the cable at gpu01 mlx5_0 port 1 goes to leaf-su01-r0 port 7, not leaf-su01-r0 port 1")
        return "done in the lab"

    fx = Effects(run=lambda s: (0, ""), ask=lambda s: False, state=lambda prev: planned_state(plan),
                 echo=lambda line: None, technician=technician)
    outcome = apply_plan(plan, journal, Options(lab_technician=True), fx)
    assert (outcome.status, outcome.step) == ("failed", 2)
    assert "goes to leaf-su01-r0 port 7" in outcome.message
    outcome = apply_plan(plan, journal, Options(lab_technician=True), fx)
    assert outcome.status == "done" and calls == [2, 2, 3]
    assert journal.done()[3]["how"] == "lab: done in the lab"


def test_one_apply_of_a_plan_at_a_time(world: dict[str, Path]) -> None:
    import fcntl
    import os

    fd = os.open(world["plan"], os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running apply holds it
        code, out = cf("apply", str(world["plan"]))
        assert code == 2 and "being applied by another process" in out
        assert not world["hooks"].exists()
        code, out = cf("apply", str(world["plan"]), "--dry-run")  # a dry run needs no lock
        assert code == 0, out
    finally:
        os.close(fd)
    code, out = cf("apply", str(world["plan"]))
    assert code == 1 and world["hooks"].read_text() == "drain gpu01\n"


def test_format_json(world: dict[str, Path]) -> None:
    result = CliRunner().invoke(app, ["apply", str(world["plan"]), "--dry-run", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["status"] == "dry-run" and doc["plan"] == str(world["plan"])
    result = CliRunner().invoke(app, ["apply", str(world["plan"]), "--format", "json"])
    doc = json.loads(result.stdout)
    assert result.exit_code == 1 and doc["status"] != "done" and doc["step"] is not None  # waits for the operator
