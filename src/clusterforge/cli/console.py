"""The CLI's consoles and output formats: `out` (stdout: results) and `err` (stderr: messages, progress),
`--format text|json`, JSON and tables as every command prints them."""

from __future__ import annotations

import json
import math
import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from rich.console import Console

if TYPE_CHECKING:
    from rich.table import Table

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
