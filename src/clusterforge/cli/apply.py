"""`clusterforge apply plan.json`: carry out a saved change plan (day2/apply.py) exactly as reviewed."""

from __future__ import annotations

import collections
import contextlib
import fcntl
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer

from ..util.errors import ExitCode, InventoryInvalid
from ..util.program import own
from .console import Format, err, out, print_json
from .progress import StepBar, step_progress

if TYPE_CHECKING:
    from ..day2.apply import State
    from ..day2.steps import Step


def apply(
    plan_file: Path = typer.Argument(..., help="the plan file written by `clusterforge diff ... --output`"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print what would run, step by step; change nothing"),
    confirm_through: int = typer.Option(0, "--confirm-through", min=0, metavar="N",
                                        help="the manual steps up to N are done: go on without asking"),
    interactive: bool | None = typer.Option(None, "--interactive/--no-interactive",
                                            help="ask for each manual step (default: when stdin is a terminal)"),
    lab_technician: bool = typer.Option(False, "--lab-technician",
                                        help="lab only: the lab does the physical steps in its simulated fabric"),
    fmt: Format = typer.Option(Format.text, "--format", help="text or json (the outcome on stdout; the steps' "
                               "lines go to stderr)"),
    parallel: int = typer.Option(8, "--parallel", min=1, max=256, metavar="N",
                                 help="machine steps of one parallel group (a wave's drain or resume hooks, its "
                                 "deploys) run at most N at once; 1: one after the other"),
) -> None:
    """Run the plan's machine steps (drain/resume hooks, deploy, learn, OpenSM files, validate) and wait for
    the operator on its physical ones; a journal beside the plan lets a re-run resume where it stopped.
    Refuses (exit 2) a plan that was edited, made by another version, or is stale; exit 1 when a step
    failed or a manual step is not confirmed yet; 0 when every step is done."""
    from ..day2.apply import Effects, Options, apply_plan
    from ..day2.journal import Journal, JournalError, journal_path
    from ..day2.planfile import PlanFileError, read_plan_file

    try:
        plan = read_plan_file(plan_file)
        journal = Journal.open(journal_path(plan_file), plan.digest)
    except (PlanFileError, JournalError) as exc:
        _refuse(str(exc))
    if not plan.env.is_dir():
        _refuse(f"{plan_file}: its environment {plan.env} is gone")
    tech = None
    if lab_technician:
        from ..day2.lab_technician import lab_technician as make_technician
        from ..rehearsal import env as labenv

        state = labenv.running(plan.env)
        if state is None:
            _refuse(f"--lab-technician: no lab is up for {plan.env}; it does a lab's physical steps only")
        tech = _reported(make_technician(plan, state, plan.env))
    cwd = Path(plan.meta.get("cwd") or Path.cwd())
    shown = err if fmt is Format.json else out  # with --format json, stdout carries the one JSON document

    def echo(line: str) -> None:
        shown.print(line, markup=False)

    opts = Options(dry_run=dry_run, confirm_through=confirm_through,
                   interactive=sys.stdin.isatty() if interactive is None else interactive,
                   lab_technician=lab_technician, parallel=parallel)
    try:
        with _exclusive(plan_file, dry_run), step_progress(f"apply {plan_file.name}", show=not dry_run) as bar:
            fx = Effects(
                run=lambda step: _run(step.argv, cwd, echo, tag=str(step.n) if step.group is not None else ""),
                ask=lambda step: _ask(step, bar),
                state=lambda prev: _state(plan.env, plan.record, prev),
                echo=echo,
                technician=tech,
                progress=bar.show,
            )
            outcome = apply_plan(plan, journal, opts, fx)
    except KeyboardInterrupt:
        err.print(f"interrupted; run `clusterforge apply {plan_file}` again to resume (journal "
                  f"{journal.path})", markup=False)
        raise typer.Exit(130) from None
    if fmt is Format.json:
        print_json({"plan": str(plan_file), "status": outcome.status, "message": outcome.message,
                    "step": outcome.step, "ran": list(outcome.ran), "journal": str(journal.path)})
    if outcome.status in ("done", "dry-run"):
        if fmt is Format.text:
            out.print(outcome.message, markup=False)
        return
    err.print(outcome.message, markup=False)
    raise typer.Exit(int(ExitCode.USAGE_OR_PARSE if outcome.status == "stale" else ExitCode.FAILURE))


@contextlib.contextmanager
def _exclusive(plan_file: Path, dry_run: bool) -> Iterator[None]:
    """One apply of a plan at a time: an exclusive lock on the plan file while it runs (released by the
    kernel if the process dies). A dry run changes nothing and needs none."""
    if dry_run:
        yield
        return
    fd = os.open(plan_file, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _refuse(f"{plan_file} is being applied by another process right now")
        yield
    finally:
        os.close(fd)


def _refuse(message: str) -> NoReturn:
    err.print(f"apply: {message}", markup=False)
    raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))


def _reported(technician: Callable[[Step], str]) -> Callable[[Step], str]:
    """The lab technician, its failures (the lab's, or a step it cannot place) a failed step."""
    from ..day2.apply import StepFailed
    from ..lab import LabError

    def run(step: Step) -> str:
        try:
            return technician(step)
        except (LabError, ValueError, OSError, InventoryInvalid) as exc:
            raise StepFailed(f"the lab technician: {exc}") from None

    return run


def _run(argv: tuple[str, ...], cwd: Path, echo: Callable[[str], None], tag: str = "") -> tuple[int, str]:
    """Run one machine step's argv (no shell), streaming its output line by line to `echo` (stderr under
    --format json), each line under the step's number as `tag` when steps run together; returns (exit code,
    output tail)."""
    cmd = own(argv)  # the plan runs with the clusterforge that checked it
    tail: collections.deque[str] = collections.deque(maxlen=200)
    try:
        proc = subprocess.Popen(cmd, cwd=cwd if cwd.is_dir() else None, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                                env=os.environ.copy())
    except OSError as exc:
        return 127, f"{shlex.join(cmd)}: {exc.strerror or exc}"
    assert proc.stdout is not None
    with proc:
        for line in proc.stdout:
            tail.append(line)
            echo(f"    {tag}| " + line.rstrip("\n"))
    return proc.returncode, "".join(tail)


def _ask(step: Step, bar: StepBar) -> bool:
    with bar.paused():  # the bar off the terminal while the operator answers
        return typer.confirm("  done?", default=False)


def _state(env: Path, record: Path, prev: State | None) -> State:
    from ..check.checked import load_checked
    from ..day2.apply import State
    from ..day2.planfile import files_digest, model_digest, record_digest

    files = files_digest(env)
    if prev is not None and prev.files and prev.files == files:
        model = prev.model
    else:
        try:
            model = model_digest(load_checked(env).inv)
        except InventoryInvalid as exc:
            model = f"invalid ({len(exc.issues)} error(s))"
    return State(model, record_digest(record), files)
