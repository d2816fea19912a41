"""Shared CLI helpers: consoles, output formats, turning errors into exit codes."""

from __future__ import annotations

import json
import math
import sys
from enum import StrEnum
from typing import Any, NoReturn

import typer
from rich.console import Console

from ..errors import ExitCode, InventoryInvalid

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
    err.print("\n".join(str(issue) for issue in shown), markup=False)
    if len(exc.issues) > len(shown):
        more = len(exc.issues) - len(shown)
        err.print(f"... and {more} more errors (`clusterforge check ENV --format json` lists them all)", markup=False)
    err.print(f"{len(exc.issues)} error(s) in the inventory", style="bold red")
    raise typer.Exit(int(ExitCode.INVALID_INVENTORY))
