"""The CLI side of `fsutil.directory_lock`: say who holds the lock while waiting, exit 1 on a timeout."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import typer

from ..errors import ExitCode
from ..fsutil import TEMP_SUFFIX, LockTimeout, directory_lock, is_temporary, terminate_cleanly
from .common import err


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
            for leftover in directory.glob(f".*{TEMP_SUFFIX}"):  # of a killed run (the lock says none is running)
                if is_temporary(leftover.name) and leftover.is_file() and not leftover.is_symlink():
                    leftover.unlink(missing_ok=True)
                    err.print(f"removed leftover temporary {leftover}", markup=False)
            yield
    except LockTimeout as exc:
        err.print(f"refused: {exc}", style="bold red", markup=False)
        raise typer.Exit(int(ExitCode.FAILURE)) from None
