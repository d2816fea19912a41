"""The CLI side of `fsutil.directory_lock`: say who holds the lock while waiting, exit 1 on a timeout."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import typer

from ..util.errors import ExitCode
from ..util.fsutil import LockTimeout, directory_lock, remove_temporaries, terminate_cleanly
from .console import err


@contextlib.contextmanager
def locked(directory: Path, active: bool = True) -> Iterator[None]:
    """Hold `directory`'s lock for the block (a no-op when not `active`): a second `render`,
    `plan --write` or `learn` on the same directory waits, then is refused (exit 1). Leftover
    temporaries of a killed run (`.NAME.RANDOM.cf-tmp`) in the directory are removed once it is held."""
    if not active:
        yield
        return
    try:
        lock = directory_lock(directory, on_wait=lambda msg: err.print(msg, markup=False))
        with terminate_cleanly(), lock:
            for leftover in remove_temporaries(directory, recursive=False):  # of a killed run (none runs now)
                err.print(f"removed leftover temporary {leftover}", markup=False)
            yield
    except LockTimeout as exc:
        err.print(f"refused: {exc}", style="bold red", markup=False)
        raise typer.Exit(int(ExitCode.FAILURE)) from None
