"""`clusterforge check ENV`: load, validate and cross-check an inventory."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from ..check.checked import summary
from .console import Format, out, print_json
from .loading import load_or_fail


def check(
    env: Path = typer.Argument(..., help="environment directory, e.g. inventories/prod"),
    fmt: Format = typer.Option(Format.text, "--format", help="text or json"),
) -> None:
    """Check an inventory: structure, references, ports, reach, addresses, power."""
    checked = load_or_fail(env, fmt)
    counts = summary(checked.index)
    if fmt is Format.json:
        print_json({"ok": True, "environment": str(env), "summary": counts})
        return
    table = Table(title=f"{env}: inventory OK", title_justify="left")
    for key in counts:
        table.add_column(key.replace("_", " "), justify="right")
    table.add_row(*(str(v) for v in counts.values()))
    out.print(table)
