"""Shared CLI helpers: consoles, output formats, turning errors into exit codes."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console

from ..util.echo import clip
from ..util.errors import ExitCode, InventoryInvalid

if TYPE_CHECKING:
    from rich.table import Table

    from ..check.checked import Checked
    from ..inventory.load import Source
    from ..model import Inventory
    from ..util.ticks import Ticks

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


class Format(StrEnum):
    text = "text"
    json = "json"


def print_json(data: Any) -> None:
    """JSON on stdout; a NaN or infinity becomes null (bare NaN is not JSON)."""
    sys.stdout.write(json.dumps(_finite(data), indent=2, sort_keys=False, default=str, allow_nan=False) + "\n")


def _finite(data: Any) -> Any:
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: _finite(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_finite(v) for v in data]
    return data


MAX_SHOWN_ERRORS = 200
"""Inventory errors printed before the rest are only counted (a broken 50 MB file has 10^6)."""


def fail_inventory(exc: InventoryInvalid) -> NoReturn:
    shown = exc.issues[:MAX_SHOWN_ERRORS]
    total = len(exc.issues) + exc.more
    err.print("\n".join(str(issue) for issue in shown), markup=False)
    if total > len(shown):
        listed = "" if exc.more else " (`clusterforge check ENV --format json` lists them all)"
        err.print(f"... and {total - len(shown)} more errors{listed}", markup=False)
    err.print(f"{total} error(s) in the inventory", style="bold red")
    raise typer.Exit(int(ExitCode.INVALID_INVENTORY))


def issues_json(exc: InventoryInvalid) -> dict[str, Any]:
    """`--format json`'s document for an invalid inventory: every located error."""
    return {"ok": False, "errors": [{"file": i.file, "line": i.line, "col": i.col, "rule": i.rule,
                                     "path": [clip(p) if isinstance(p, str) else p for p in i.path],
                                     "message": i.message} for i in exc.issues]}


def load_or_fail(env: Path, fmt: Format = Format.text, *, heading: str | None = None) -> Checked:
    """The environment loaded and cross-checked (api.load_checked), or its errors printed and exit 3.

    With `fmt` json the errors are also the JSON document on stdout (`issues_json`); `heading` is a line
    printed on stderr before them (`diff`: which of the two inventories is invalid)."""
    from ..check.checked import load_checked  # the model, checks and planner: imported by the commands that load

    try:
        return load_checked(env)
    except InventoryInvalid as exc:
        _fail(exc, fmt, heading)


def load_inventory_or_fail(env: Path) -> tuple[Inventory, Source]:
    """The environment parsed and validated, not planned nor cross-checked (`plan` re-plans it), or exit 3."""
    from ..inventory.load import load_inventory

    try:
        return load_inventory(env)
    except InventoryInvalid as exc:
        _fail(exc, Format.text, None)


def _fail(exc: InventoryInvalid, fmt: Format, heading: str | None) -> NoReturn:
    if fmt is Format.json:
        print_json(issues_json(exc))
    if heading is not None:
        err.print(heading, markup=False)
    fail_inventory(exc)


def check_output_path(path: Path, option: str, *, directory: bool) -> None:
    """Refuse an output path of the wrong kind before any work is done (exit 2).

    A directory option (`--export DIR`) may not name an existing non-directory; a file option
    (`--junit FILE`, `--output FILE`) may not name a directory or a device. Missing parents are
    created when written, so the nearest one that exists must be a directory.
    """
    problem = None
    if path.exists():
        if directory and not path.is_dir():
            problem = "exists and is not a directory"
        elif not directory and path.is_dir():
            problem = "is a directory; give a file name"
        elif not directory and not path.is_file():
            problem = "exists and is not a regular file"
    else:
        parent = next((p for p in path.parents if p.exists()), None)
        if parent is not None and not parent.is_dir():
            problem = f"{parent} is not a directory"
    if problem:
        err.print(f"{option} {path}: {problem}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))


def print_table(table: Table) -> None:
    """A rich table on stdout: fitted to a terminal; piped, as wide as its widest row, lines stripped (a row
    stays one greppable line whatever the width)."""
    if out.is_terminal:
        out.print(table)
        return
    from io import StringIO

    wide = Console(file=StringIO(), width=100_000, no_color=True, highlight=False)
    wide.print(table)
    text = wide.file.getvalue()  # type: ignore[attr-defined]
    out.print("\n".join(line.rstrip() for line in text.splitlines()), markup=False, highlight=False, soft_wrap=True)


def no_progress(note: str = "") -> None:
    """`progress`'s advance when there is no bar."""
    return None


@contextmanager
def progress(description: str, total: int | None = None) -> Iterator[Callable[[str], None]]:
    """A progress bar on stderr while long work runs (a deploy across hosts, ...), shown only when stderr is a
    terminal: yields `advance(note)`, one call per unit of work done. Elsewhere (pipes, CI, tests) `advance`
    does nothing, so the output stays the same lines as before."""
    if not err.is_terminal:
        yield no_progress
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True) as bar:
        task = bar.add_task(description, total=total)

        def advance(note: str = "") -> None:
            bar.update(task, advance=1, description=f"{description} {note}".rstrip())

        yield advance


class HostProgress:
    """`host_progress`'s handle: `start(total)` once the hosts are known, `done(failed)` as each finishes."""

    def __init__(self, description: str, show: Callable[[HostProgress], None]) -> None:
        self.description = description
        self.total: int | None = None
        self.finished = 0
        self.failed = 0
        self._show = show

    @property
    def tally(self) -> str:
        """`205/2,048 host(s) done, 1 failed, 1,843 remaining`."""
        if self.total is None:
            return f"{self.finished:,} host(s) done, {self.failed:,} failed"
        return (f"{self.finished:,}/{self.total:,} host(s) done, {self.failed:,} failed, "
                f"{max(self.total - self.finished, 0):,} remaining")

    def start(self, total: int) -> None:
        self.total = total
        self._show(self)

    def done(self, failed: bool = False) -> None:
        self.finished += 1
        self.failed += failed
        self._show(self)


@contextmanager
def host_progress(description: str, *, quiet: bool = False, lines: bool = True) -> Iterator[HostProgress]:
    """Progress of a run over many hosts (a deploy), on stderr, never on stdout. On a terminal: a bar with done /
    failed / remaining and the time left, gone when the run ends. Piped (logs, CI): with `lines`, one line at
    each tenth of the hosts (`deploy prod: 205/2,048 host(s) done, 1 failed, 1,843 remaining`), never one per
    host; without (`--format json`), nothing. `quiet`: nothing either way."""
    if quiet or not err.is_terminal:
        step = [0]

        def log(p: HostProgress) -> None:
            if quiet or not lines or not p.total or not p.finished:
                return
            tenth = max(1, math.ceil(p.total / 10))
            if p.finished == p.total or p.finished // tenth > step[0]:
                step[0] = p.finished // tenth
                err.print(f"{description}: {p.tally}", markup=False)

        yield HostProgress(description, log)
        return
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[tally]}"),
                  TextColumn("ETA"), TimeRemainingColumn(), TimeElapsedColumn(), console=err, transient=True) as bar:
        task = bar.add_task(description, total=None, tally="reading the inventory")

        def show(p: HostProgress) -> None:
            bar.update(task, total=p.total, completed=p.finished, tally=p.tally)

        yield HostProgress(description, show)


class StepBar:
    """`step_progress`'s handle: `show(done, failed, total)` as steps end; `paused()` around a prompt (the bar
    is taken off the terminal while the operator answers)."""

    def __init__(self, description: str, bar: Any = None) -> None:
        self.description = description
        self._bar = bar
        self._task = None if bar is None else bar.add_task(description, total=None, tally="")

    def show(self, done: int, failed: int, total: int) -> None:
        if self._bar is None:
            return
        tally = f"{done:,}/{total:,} step(s) done" + (f", {failed:,} failed" if failed else "")
        self._bar.update(self._task, total=total, completed=done + failed, tally=tally)

    @contextmanager
    def paused(self) -> Iterator[None]:
        if self._bar is None:
            yield
            return
        self._bar.stop()
        try:
            yield
        finally:
            self._bar.start()


@contextmanager
def step_progress(description: str, *, show: bool = True) -> Iterator[StepBar]:
    """Progress of a run of many steps (apply), on stderr: on a terminal a bar with steps done / failed / total,
    the time left and elapsed, gone when the run ends (the steps' own lines scroll above it). Piped, nothing:
    the step lines already say where the run is."""
    if not show or not err.is_terminal:
        yield StepBar(description)
        return
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[tally]}"),
                  TextColumn("ETA"), TimeRemainingColumn(), TimeElapsedColumn(), console=err, transient=True) as bar:
        yield StepBar(description, bar)


@contextmanager
def ticked(description: str) -> Iterator[Ticks]:
    """A `Ticks` for work whose size is learned as it goes (lab up: the image, each host, the simulator,
    OpenSM), shown on a terminal as a bar with done / total, the stage just done, ETA and elapsed; piped,
    nothing (the command's own lines say what it did)."""
    from ..util.ticks import Ticks

    if not err.is_terminal:
        yield Ticks()
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[note]}"), TextColumn("ETA"), TimeRemainingColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as bar:
        task = bar.add_task(description, total=None, note="")

        def tell(note: str, done: int, total: int) -> None:
            bar.update(task, total=total, completed=done, note=note)

        yield Ticks(tell)
