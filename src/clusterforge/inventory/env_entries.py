"""Entries of an environment directory that look like inventory files but cannot be read as one.

A dangling symbolic link, a link loop, a directory or a FIFO named `*.yaml` used to be skipped without a
word, so `check` passed on an environment missing that file. `entry_issues` names each as an INV-ENV
error; `load.environment_files` raises them. Stdlib only (the declared-fabric fast path lists the same files).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from ..util.echo import echo
from ..util.errors import InventoryIssue

SUFFIXES = (".yaml", ".yml")


def is_candidate(entry: Path) -> bool:
    """An entry the loader reads when it is a file: `*.yaml` / `*.yml`, not hidden."""
    return entry.suffix in SUFFIXES and not entry.name.startswith(".")


def broken_entries(entries: Iterable[Path]) -> list[tuple[Path, str]]:
    """(entry, why) for every candidate entry that is not a readable regular file (a link to one is fine)."""
    out: list[tuple[Path, str]] = []
    for entry in entries:
        if not is_candidate(entry):
            continue
        try:
            mode = entry.stat().st_mode
        except OSError as exc:
            out.append((entry, _unreachable(entry, exc)))
            continue
        if stat.S_ISREG(mode):
            continue
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file (a FIFO, socket or device)"
        out.append((entry, f"{kind} named like an inventory file: it is not read; rename or remove it"))
    return sorted(out)


def _unreachable(entry: Path, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "a symbolic link loop: the file it stands for is not read; fix or remove the link"
    if entry.is_symlink():
        try:
            target = echo(os.readlink(entry))
        except OSError:
            target = "?"
        return f"a symbolic link to {target}, which does not exist: the file is not read; fix or remove the link"
    return f"cannot be read: {exc.strerror or exc}"


def entry_issues(entries: Iterable[Path]) -> list[InventoryIssue]:
    """`broken_entries` as INV-ENV errors, each naming its entry."""
    return [InventoryIssue((), why, str(entry), rule="INV-ENV") for entry, why in broken_entries(entries)]


def dir_name(path: Path) -> str:
    """The name of the directory `path` leads to (`inventories/prod/.` -> `prod`), or, where it cannot be
    resolved (a symbolic link loop), its own last part: the command goes on to say what is wrong with it."""
    try:
        return path.resolve().name
    except (OSError, RuntimeError):  # RuntimeError: a link loop, on Python before 3.13
        return path.absolute().name
