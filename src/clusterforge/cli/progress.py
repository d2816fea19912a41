"""Progress on stderr while long work runs (a deploy, a collection, an apply, lab up): a bar on a terminal,
plain lines or nothing elsewhere, never on stdout. The console is looked up when used (`console.err`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from . import console

if TYPE_CHECKING:
    from ..util.ticks import Ticks

def no_progress(note: str = "") -> None:
    """`progress`'s advance when there is no bar."""
    return None


@contextmanager
def progress(description: str, total: int | None = None) -> Iterator[Callable[[str], None]]:
    """A progress bar on stderr while long work runs (a deploy across hosts, ...), shown only when stderr is a
    terminal: yields `advance(note)`, one call per unit of work done. Elsewhere (pipes, CI, tests) `advance`
    does nothing, so the output stays the same lines as before."""
    if not console.err.is_terminal:
        yield no_progress
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console.err, transient=True) as bar:
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
    if quiet or not console.err.is_terminal:
        step = [0]

        def log(p: HostProgress) -> None:
            if quiet or not lines or not p.total or not p.finished:
                return
            tenth = max(1, math.ceil(p.total / 10))
            if p.finished == p.total or p.finished // tenth > step[0]:
                step[0] = p.finished // tenth
                console.err.print(f"{description}: {p.tally}", markup=False)

        yield HostProgress(description, log)
        return
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[tally]}"),
                  TextColumn("ETA"), TimeRemainingColumn(), TimeElapsedColumn(), console=console.err,
                  transient=True) as bar:
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
    if not show or not console.err.is_terminal:
        yield StepBar(description)
        return
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[tally]}"),
                  TextColumn("ETA"), TimeRemainingColumn(), TimeElapsedColumn(), console=console.err,
                  transient=True) as bar:
        yield StepBar(description, bar)


@contextmanager
def ticked(description: str) -> Iterator[Ticks]:
    """A `Ticks` for work whose size is learned as it goes (lab up: the image, each host, the simulator,
    OpenSM), shown on a terminal as a bar with done / total, the stage just done, ETA and elapsed; piped,
    nothing (the command's own lines say what it did)."""
    from ..util.ticks import Ticks

    if not console.err.is_terminal:
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
                  console=console.err, transient=True) as bar:
        task = bar.add_task(description, total=None, note="")

        def tell(note: str, done: int, total: int) -> None:
            bar.update(task, total=total, completed=done, note=note)

        yield Ticks(tell)
