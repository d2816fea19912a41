"""`clusterforge parse TOOL FILE`: print the typed records a tool's saved output parses to."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from ..collect.store import DEFAULT_MAX_MB, OutputTooLarge, read_output
from ..parse import PARSERS, ParseError, to_jsonable
from ..util.errors import ExitCode
from .console import Format, err, out, print_json


def parse(
    tool: str = typer.Argument(..., help=f"one of: {', '.join(PARSERS)}"),
    file: Path = typer.Argument(..., help="saved output of the tool ('-' for stdin)"),
    fmt: Format = typer.Option(Format.json, "--format", help="json (default) or text"),
    max_mb: int = typer.Option(
        DEFAULT_MAX_MB, "--max-mb", min=1, help="refuse input larger than this many MB (megabytes)"
    ),
) -> None:
    """Parse saved tool output into typed records (the validator's input)."""
    if tool not in PARSERS:
        err.print(f"unknown tool {tool!r}; choose one of: {', '.join(PARSERS)}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    try:
        text = read_output(sys.stdin.buffer if str(file) == "-" else file, max_mb)
    except OutputTooLarge as exc:
        err.print(f"{file}: {exc} (raise the cap with --max-mb)", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    except OSError as exc:
        err.print(f"{file}: {exc.strerror or exc}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    try:
        records = PARSERS[tool](text)
    except ParseError as exc:
        err.print(f"{file}:{exc.line_no}: {exc.message}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    data = to_jsonable(tool, records)
    if fmt is Format.json:
        print_json(data)
    else:
        out.print(data)
