"""`clusterforge apply plan.json`: carry out a saved change plan exactly as it was reviewed.

Before anything runs, and again before every step, the state is compared with what the plan (or
the journal's last finished step) recorded: the new inventory's loaded model and the deploy record
(read once between two steps: the state a machine step left is the next step's starting point).
Any other change makes the plan stale: refused (exit 2). Then the steps run in order, each once:

* a machine step (`manual` False) runs its argv as is (never through a shell; a `clusterforge`
  argv runs this clusterforge, the one that checked the plan); a non-zero exit stops the apply
  with the step number and its output, journaled as failed: the next run retries it;
* a manual step (a person's work: unplug, install, take out of service, ...) is done when the
  operator confirms it: `--confirm-through N` confirms every manual step up to N, otherwise apply
  asks (interactively) or stops before it and says where; on a running lab, `--lab-technician`
  does the physical ones in the simulated fabric instead;
* every finished step is journaled (day2/journal.py) with the state it left, so a re-run after a
  failure, a crash or Ctrl-C resumes at the first unfinished step and never repeats a finished one;
* the machine steps of a parallel group (`Step.group`: a wave's drain or resume hooks, its deploys; proven
  independent by the verifier) run at the same time, at most `Options.parallel` at once, each journaled as
  it starts and ends; a failure lets the others finish, then stops the apply there. The state is read once
  the whole group has ended; a crash mid-group reruns the group's unfinished steps only.

The effects (running argv, asking, the lab, reading the state) are passed in; this module decides.
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from .journal import Journal
from .planfile import PlanFile
from .steps import Step

LAB_PHASES = frozenset({"unplug", "remove", "install", "plug", "relabel", "trunks"})


@dataclass(frozen=True)
class State:
    """The inventory and the deploy record as they are now. `files` only spares re-loading the model."""

    model: str
    record: str
    files: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"model": self.model, "record": self.record, "files": self.files}

    @classmethod
    def of(cls, data: dict[str, object]) -> State:
        return cls(str(data.get("model", "")), str(data.get("record", "")), str(data.get("files", "")))

    def same(self, other: State) -> bool:
        return self.model == other.model and self.record == other.record


def planned_state(plan: PlanFile) -> State:
    new = plan.meta["inventories"]["new"]
    return State(str(new["model"]), str(plan.meta["record"]["digest"]), str(new.get("files", "")))


@dataclass(frozen=True)
class Options:
    dry_run: bool = False
    confirm_through: int = 0  # manual steps numbered up to this are confirmed
    interactive: bool = False  # ask the operator for each manual step past confirm_through
    lab_technician: bool = False  # the lab does the physical steps
    parallel: int = 8  # machine steps of one parallel group run at once, at most


@dataclass
class Effects:
    """What apply does to the world. `run(step) -> (exit code, output)`; `ask(step) -> confirmed?`;
    `technician(step) -> what it did`, or None where there is no lab technician;
    `state(previous)` the current State (reusing `previous.model` when the files are unchanged);
    `progress(done, failed, total)` after each step ends (a progress bar; from a group's worker threads too)."""

    run: Callable[[Step], tuple[int, str]]
    ask: Callable[[Step], bool]
    state: Callable[[State | None], State]
    echo: Callable[[str], None]
    technician: Callable[[Step], str] | None = None
    progress: Callable[[int, int, int], None] | None = None


Status = Literal["done", "failed", "waiting", "stale", "dry-run"]


class StepFailed(Exception):
    """A manual step's stand-in (the lab technician) could not do it: the step failed."""


@dataclass(frozen=True)
class Outcome:
    status: Status
    message: str
    step: int | None = None  # where it stopped (failed, waiting, stale)
    ran: tuple[int, ...] = ()  # steps finished by this run


def stale_reasons(plan: PlanFile, expected: State, now: State, since: str) -> list[str]:
    out = []
    if now.model != expected.model:
        how = "does not load now" if now.model.startswith("invalid") else "changed"
        out.append(f"the inventory {plan.meta['env']} {how} since {since}")
    if now.record != expected.record:
        out.append(f"the deploy record in {plan.record} changed since {since} (a deploy ran?)")
    return out


def step_text(step: Step) -> str:
    where = f"[{step.rack}] " if step.rack else ""
    return f"step {step.n} ({step.phase}) {where}{step.subject}: {step.action}"


def apply_plan(plan: PlanFile, journal: Journal, opts: Options, fx: Effects) -> Outcome:
    """Run (or with `dry_run`, show) the plan's unfinished steps in order; see the module docstring."""
    done = journal.done()
    last = journal.last_state()
    expected = State.of(last) if last else planned_state(plan)
    since = "the plan was made" if not done else f"step {max(done)} finished"
    now = fx.state(expected)
    interrupted = journal.interrupted()
    if interrupted is not None and not now.same(expected):
        fx.echo(f"note: step {interrupted} was interrupted; the state it left is taken as it is and the "
                "step runs again")
        expected = now
    reasons = stale_reasons(plan, expected, now, since)
    if reasons:
        return Outcome("stale", "the plan is stale: " + "; ".join(reasons)
                       + ". Make a new plan with `clusterforge diff ... --output` and review it.")
    todo = [s for s in plan.steps if s.n not in done]
    tally = _Tally(len(plan.steps) - len(todo), len(plan.steps), fx.progress)
    tally.show()
    if done:
        fx.echo(f"resuming: {len(done)} of {len(plan.steps)} steps done (journal {journal.path})")
    if opts.dry_run:
        return _show(plan, todo, opts, fx)
    ran: list[int] = []
    fresh: State | None = now  # read since the last step: nothing ran in between, no need to read it again
    i = 0
    while i < len(todo):
        step = todo[i]
        batch = [step]
        while (step.group is not None and not step.manual and i + len(batch) < len(todo)
               and todo[i + len(batch)].group == step.group):
            batch.append(todo[i + len(batch)])
        i += len(batch)
        now = fresh if fresh is not None else fx.state(expected)
        fresh = None
        reasons = stale_reasons(plan, expected, now, f"step {ran[-1]} finished" if ran else since)
        if reasons:
            return Outcome("stale", f"stopped before step {step.n}: " + "; ".join(reasons), step.n, tuple(ran))
        if len(batch) > 1:
            failed, after = _run_group(batch, journal, opts, fx, expected, tally)
            ran += [s.n for s in batch if s not in failed]
            if failed:
                first, (rc, output) = min(failed.items(), key=lambda kv: kv[0].n)
                others = sorted(s.n for s in failed if s is not first)
                return Outcome("failed", f"step {first.n} failed (exit {rc}): {shlex.join(first.argv)}\n"
                               + _indent(output[-4000:]) + (f"\nsteps {', '.join(map(str, others))} failed too"
                                                            if others else "")
                               + "\nfix the cause and run apply again: it retries the failed steps", first.n,
                               tuple(ran))
            expected = fresh = after
            continue
        fx.echo(step_text(step))
        if step.manual:
            try:
                how = _confirmation(step, opts, fx)
            except StepFailed as exc:
                journal.record(step.n, "failed", rc=1, output=str(exc), state=expected.as_dict())
                tally.end(failed=True)
                return Outcome("failed", f"step {step.n} failed: {exc}\nfix the cause and run apply again: it "
                               f"retries step {step.n}", step.n, tuple(ran))
            if how is None:
                return Outcome("waiting", _waiting(step, len(plan.steps)), step.n, tuple(ran))
            journal.record(step.n, "done", how=how, state=expected.as_dict())
            tally.end()
            fx.echo(f"  done ({how})")
        else:
            fx.echo(f"  $ {shlex.join(step.argv)}")
            journal.record(step.n, "start")
            rc, output = fx.run(step)
            after = fx.state(expected)
            if rc != 0:
                journal.record(step.n, "failed", rc=rc, output=output[-4000:], state=after.as_dict())
                tally.end(failed=True)
                return Outcome("failed", f"step {step.n} failed (exit {rc}): {shlex.join(step.argv)}\n"
                               + _indent(output[-4000:]) + "\nfix the cause and run apply again: it retries "
                               f"step {step.n}", step.n, tuple(ran))
            journal.record(step.n, "done", how="ran", state=after.as_dict())
            tally.end()
            expected = fresh = after
        ran.append(step.n)
    return Outcome("done", f"all {len(plan.steps)} steps done", None, tuple(ran))


class _Tally:
    """Steps done and failed of the plan, told to `Effects.progress` as each ends (under a lock: a group's
    steps end in their worker threads)."""

    def __init__(self, done: int, total: int, tell: Callable[[int, int, int], None] | None) -> None:
        self.done, self.failed, self.total, self._tell = done, 0, total, tell
        self._lock = threading.Lock()

    def show(self) -> None:
        if self._tell is not None:
            self._tell(self.done, self.failed, self.total)

    def end(self, failed: bool = False) -> None:
        with self._lock:
            self.failed += failed
            self.done += not failed
            self.show()


def _run_group(batch: list[Step], journal: Journal, opts: Options, fx: Effects,
               prev: State, tally: _Tally | None = None) -> tuple[dict[Step, tuple[int, str]], State]:
    """Run a parallel group's steps at the same time (at most `opts.parallel`), each journaled as it starts
    and ends; then read the state once and journal it (`joined`). Returns the failed steps and that state."""
    from concurrent.futures import ThreadPoolExecutor

    fx.echo(f"steps {batch[0].n}-{batch[-1].n} together ({batch[0].phase}, parallel group {batch[0].group}, "
            f"{len(batch)} steps, {max(1, min(opts.parallel, len(batch)))} at a time)")
    failed: dict[Step, tuple[int, str]] = {}

    def one(step: Step) -> None:
        fx.echo(step_text(step))
        fx.echo(f"  $ {shlex.join(step.argv)}")
        journal.record(step.n, "start")
        try:
            rc, output = fx.run(step)
        except Exception as exc:  # the runner itself broke: that step failed, the others go on
            rc, output = 1, f"{type(exc).__name__}: {exc}"
        if rc != 0:
            failed[step] = (rc, output)
            journal.record(step.n, "failed", rc=rc, output=output[-4000:])
        else:
            journal.record(step.n, "done", how="ran")
        if tally is not None:
            tally.end(failed=rc != 0)

    with ThreadPoolExecutor(max_workers=max(1, min(opts.parallel, len(batch)))) as pool:
        list(pool.map(one, batch))
    after = fx.state(prev)
    journal.record(batch[0].n, "joined", steps=[s.n for s in batch], state=after.as_dict())
    return failed, after


def _confirmation(step: Step, opts: Options, fx: Effects) -> str | None:
    """How a manual step is done now, or None: stop and wait for the operator."""
    if fx.technician is not None and _by_lab(step, opts, fx):
        return "lab: " + fx.technician(step)
    if step.n <= opts.confirm_through:
        return f"confirmed by --confirm-through {opts.confirm_through}"
    if opts.interactive:
        return "confirmed by the operator" if fx.ask(step) else None
    return None


def _by_lab(step: Step, opts: Options, fx: Effects) -> bool:
    """The lab technician does this manual step in the simulated fabric."""
    return opts.lab_technician and fx.technician is not None and step.phase in LAB_PHASES


def _waiting(step: Step, total: int) -> str:
    return (f"stopped before step {step.n} of {total}: it is manual ({step.phase}) and not confirmed. "
            f"When it is done, run apply again with --confirm-through {step.n} (or interactively)")


def _show(plan: PlanFile, todo: list[Step], opts: Options, fx: Effects) -> Outcome:
    for step in todo:
        fx.echo(step_text(step))
        if not step.manual:
            fx.echo(f"  would run: {shlex.join(step.argv)}")
        elif _by_lab(step, opts, fx):
            fx.echo("  the lab technician would do it in the simulated fabric")
        elif step.n <= opts.confirm_through:
            fx.echo(f"  manual: confirmed by --confirm-through {opts.confirm_through}")
        else:
            fx.echo("  manual: would wait for the operator's confirmation")
    return Outcome("dry-run", f"dry run: {len(todo)} of {len(plan.steps)} steps to do; nothing was changed")


def _indent(text: str) -> str:
    return "\n".join("    | " + line for line in text.rstrip("\n").splitlines())
