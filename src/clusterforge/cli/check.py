"""`clusterforge check ENV`: load, validate and cross-check an inventory."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from ..api import load_checked, summary
from ..errors import InventoryInvalid
from .common import Format, fail_inventory, out, print_json


def check(
    env: Path = typer.Argument(..., help="environment directory, e.g. inventories/prod"),
    fmt: Format = typer.Option(Format.text, "--format", help="text or json"),
) -> None:
    """Check an inventory: structure, references, ports, reach, addresses, power."""
    try:
        checked = load_checked(env)
    except InventoryInvalid as exc:
        if fmt is Format.json:
            print_json(
                {
                    "ok": False,
                    "errors": [
                        {
                            "file": i.file,
                            "line": i.line,
                            "col": i.col,
                            "rule": i.rule,
                            "path": list(i.path),
                            "message": i.message,
                        }
                        for i in exc.issues
                    ],
                }
            )
        fail_inventory(exc)
    counts = summary(checked.index)
    if fmt is Format.json:
        print_json({"ok": True, "environment": str(env), "summary": counts})
        return
    table = Table(title=f"{env}: inventory OK", title_justify="left")
    for key in counts:
        table.add_column(key.replace("_", " "), justify="right")
    table.add_row(*(str(v) for v in counts.values()))
    out.print(table)
