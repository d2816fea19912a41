"""Loading an environment for a command, and checking its inputs and outputs before any work: an invalid
inventory's errors printed (and its JSON document) and exit 3, an output path of the wrong kind exit 2."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from ..util.echo import clip
from ..util.errors import ExitCode, InventoryInvalid
from . import console
from .console import Format, print_json

if TYPE_CHECKING:
    from ..check.checked import Checked
    from ..inventory.load import Source
    from ..model import Inventory

MAX_SHOWN_ERRORS = 200
"""Inventory errors printed before the rest are only counted (a broken 50 MB file has 10^6)."""


def fail_inventory(exc: InventoryInvalid) -> NoReturn:
    shown = exc.issues[:MAX_SHOWN_ERRORS]
    total = len(exc.issues) + exc.more
    console.err.print("\n".join(str(issue) for issue in shown), markup=False)
    if total > len(shown):
        listed = "" if exc.more else " (`clusterforge check ENV --format json` lists them all)"
        console.err.print(f"... and {total - len(shown)} more errors{listed}", markup=False)
    console.err.print(f"{total} error(s) in the inventory", style="bold red")
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
        console.err.print(heading, markup=False)
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
        console.err.print(f"{option} {path}: {problem}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
