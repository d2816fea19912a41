"""apply's progress (issue #26, item 3): steps done / failed / total as each step ends, a group's steps from
their threads, a resumed run counting what the journal has; on a terminal a bar, piped nothing; the bar is
taken off the terminal while the operator answers a manual step."""

from __future__ import annotations

import dataclasses
import io
import threading
from pathlib import Path

import pytest
from rich.console import Console

from clusterforge.cli import console
from clusterforge.cli import progress as cli_progress
from clusterforge.day2.apply import Effects, Options, State, apply_plan
from clusterforge.day2.journal import Journal
from clusterforge.day2.planfile import PlanFile
from clusterforge.day2.steps import Step


def _plan(tmp_path: Path, steps: list[Step]) -> PlanFile:
    doc = {"digest": "sha256:test", "meta": {"env": "lab", "env_path": str(tmp_path),
                                             "inventories": {"new": {"model": "m0"}},
                                             "record": {"dir": str(tmp_path / "state"), "digest": "r0"}}}
    return PlanFile(tmp_path / "plan.json", doc, tuple(steps))


def _steps() -> list[Step]:
    steps = [Step(i + 1, "drain", "r1", f"gpu0{i + 1}", "drain", ("drain", f"gpu0{i + 1}"), group=1)
             for i in range(4)]
    steps.append(Step(5, "unplug", "r1", "C-1", "unplug C-1"))
    steps.append(Step(6, "validate", None, "all", "validate", ("clusterforge", "validate", "lab")))
    return steps


def _effects(seen: list[tuple[int, int, int]], fail: frozenset[int] = frozenset(),
             asked: list[int] | None = None) -> Effects:
    lock = threading.Lock()

    def tell(done: int, failed: int, total: int) -> None:
        with lock:
            seen.append((done, failed, total))

    def ask(step: Step) -> bool:
        if asked is not None:
            asked.append(step.n)
        return True

    return Effects(run=lambda s: (2, "broke") if s.n in fail else (0, ""), ask=ask,
                   state=lambda prev: State("m0", "r0"), echo=lambda line: None, progress=tell)


def test_every_step_counts_once_as_it_ends(tmp_path: Path) -> None:
    plan = _plan(tmp_path, _steps())
    seen: list[tuple[int, int, int]] = []
    outcome = apply_plan(plan, Journal.open(tmp_path / "j", plan.digest), Options(interactive=True), _effects(seen))
    assert outcome.status == "done", outcome.message
    assert seen[0] == (0, 0, 6) and seen[-1] == (6, 0, 6)
    assert [d for d, _, _ in seen] == list(range(7))  # one more at each end, the group's four included


def test_a_failure_counts_as_failed_and_a_resume_starts_from_the_journal(tmp_path: Path) -> None:
    plan = _plan(tmp_path, _steps())
    seen: list[tuple[int, int, int]] = []
    journal = tmp_path / "j"
    fx = _effects(seen, frozenset({2}))
    outcome = apply_plan(plan, Journal.open(journal, plan.digest), Options(interactive=True), fx)
    assert outcome.status == "failed"
    assert seen[-1] == (3, 1, 6)  # three of the group done, one failed; nothing after it ran
    seen.clear()
    outcome = apply_plan(plan, Journal.open(journal, plan.digest), Options(interactive=True), _effects(seen))
    assert outcome.status == "done" and seen[0] == (3, 0, 6) and seen[-1] == (6, 0, 6)


def test_the_bar_shows_on_a_terminal_and_steps_aside_for_a_prompt(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    tty = io.StringIO()
    monkeypatch.setattr(console, "err", Console(file=tty, force_terminal=True, width=160))
    plan = _plan(tmp_path, _steps())
    asked: list[int] = []
    with cli_progress.step_progress("apply plan.json") as bar:
        live: list[bool] = []

        def ask(step: Step) -> bool:
            with bar.paused():
                live.append(bar._bar.live.is_started)  # type: ignore[union-attr]
            asked.append(step.n)
            return True

        fx = dataclasses.replace(_effects([]), ask=ask, progress=bar.show)
        outcome = apply_plan(plan, Journal.open(tmp_path / "j", plan.digest), Options(interactive=True), fx)
        assert bar._bar.live.is_started  # type: ignore[union-attr]  # back after the prompt
    assert outcome.status == "done" and asked == [5] and live == [False]
    assert "apply plan.json" in tty.getvalue() and "6/6 step(s) done" in tty.getvalue()
    piped = io.StringIO()
    monkeypatch.setattr(console, "err", Console(file=piped, force_terminal=False, width=160))
    with cli_progress.step_progress("apply plan.json") as bar:
        bar.show(1, 0, 6)
        with bar.paused():
            pass
    assert piped.getvalue() == ""
