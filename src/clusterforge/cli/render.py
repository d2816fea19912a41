"""`clusterforge render ENV --output DIR`: write every rendered file of an environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from ..inventory.env_entries import dir_name
from ..render import Rendered, WriteReport, write_tree
from ..render import render as render_files
from ..util.errors import ExitCode
from ..util.fsutil import LockTimeout
from ..validate.declared import key_before_load, refresh
from .console import Format, err, out, print_json
from .loading import load_or_fail
from .progress import progress

LAB_ENV = "lab"  # the simulated lab: ibsim assigns the GUIDs, placeholders are expected there


def render(
    env: Path = typer.Argument(..., help="environment directory, e.g. inventories/prod"),
    output: Path | None = typer.Option(None, "--output", "-o", help="output directory (default out/<env>)"),
    fmt: Format = typer.Option(Format.text, "--format", help="text or json"),
    svg: bool = typer.Option(True, "--svg/--no-svg", help="draw fabric/fabric.svg with Graphviz dot"),
) -> None:
    """Render configs, GUID files, topology, ibsim net, cabling CSVs and the fabric diagram."""
    env_name = dir_name(env)  # a link loop: load says what is wrong
    target = output if output is not None else Path("out") / env_name
    # a bar on a terminal's stderr only (prod renders thousands of files): load, render, write
    with progress(f"render {env.name}", total=3) as advance:
        key = key_before_load(env) if env.is_dir() else None
        checked = load_or_fail(env, fmt)
        advance("loaded")
        result = render_files(checked.index, env_name, svg=svg)
        advance(f"{len(result.files)} files rendered")
        try:
            report = write_tree(target, result.files, on_wait=lambda msg: err.print(msg, markup=False))
        except (OSError, ValueError, LockTimeout) as exc:
            err.print(f"cannot write {target}: {exc}", style="bold red", markup=False)
            raise typer.Exit(int(ExitCode.FAILURE)) from None
        advance("written")
    if key is not None:  # validate --from DIR --fabric-only answers from it on its first run (docs/validate.md)
        refresh(env, checked.index, key)
    for line in report.ignored:
        err.print(f"warning: ignored manifest line {line!r} (not a plain relative path inside {target})",
                  style="yellow", markup=False)
    for rel in report.temporaries:
        err.print(f"removed leftover temporary {rel}", markup=False)
    if fmt is Format.json:
        print_json(_json(env_name, target, result, report))
        return
    _text(env_name, target, result, report)


def _json(env_name: str, target: Path, result: Rendered, report: WriteReport) -> dict[str, Any]:
    return {
        "ok": True,
        "environment": env_name,
        "output": str(target),
        "files": len(result.files),
        "kinds": result.count_by_kind(),
        "written": report.written,
        "unchanged": len(report.unchanged),
        "removed": report.removed,
        "ignored_manifest_lines": report.ignored,
        "temporaries_removed": report.temporaries,
        "placeholders": {path: list(labels) for path, labels in result.placeholders.items()},
        "notes": list(result.notes),
    }


def _text(env_name: str, target: Path, result: Rendered, report: WriteReport) -> None:
    table = Table(
        title=f"{env_name}: {len(result.files)} files in {target} ({len(report.written)} written, "
        f"{len(report.unchanged)} unchanged, {len(report.removed)} removed)",
        title_justify="left",
    )
    table.add_column("kind")
    table.add_column("files", justify="right")
    for kind, count in result.count_by_kind().items():
        table.add_row(kind, str(count))
    out.print(table)
    for rel in report.removed:
        out.print(f"removed stale {rel}", markup=False)
    for note in result.notes:
        err.print(f"note: {note}", markup=False)
    if not result.placeholders:
        return
    devices = sorted({label for labels in result.placeholders.values() for label in labels})
    if env_name == LAB_ENV:
        err.print(f"{len(result.placeholders)} files use placeholder GUIDs (0x02cf...) for "
                  f"{len(devices)} devices, as expected in the simulated lab", markup=False)
        return
    err.print(f"warning: {len(result.placeholders)} files contain placeholder GUIDs (0x02cf...) for "
              f"{len(devices)} devices whose GUIDs are not known; learn them into guid_locks "
              "and render again before deploying these files:", style="yellow", markup=False)
    for path, labels in result.placeholders.items():
        shown = ", ".join(labels[:4]) + (f", ... ({len(labels)} in all)" if len(labels) > 4 else "")
        err.print(f"  {path}: {shown}", markup=False)
