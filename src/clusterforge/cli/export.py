"""`clusterforge export netbox ENV --output DIR`: an environment as NetBox bulk-import CSVs."""

from __future__ import annotations

from pathlib import Path

import typer

from ..util.errors import ExitCode
from ..util.fsutil import write_atomic
from .console import Format, err, out, print_json
from .loading import check_output_path, load_or_fail

app = typer.Typer(no_args_is_help=True, help="Export an environment in another tool's format (NetBox CSV).")


@app.command("netbox")
def netbox(
    env: Path = typer.Argument(..., help="environment directory, e.g. inventories/prod"),
    output: Path = typer.Option(..., "--output", "-o", help="directory for the CSV files"),
    fmt: Format = typer.Option(Format.text, "--format", help="text or json"),
) -> None:
    """Write ENV as NetBox bulk-import CSVs (NetBox 4.2 columns), one file per object type.

    Import them into NetBox in the order of their numbers (Organization, then DCIM > Import for
    each). Exit codes: 0 written, 2 bad --output, 3 invalid inventory, 1 a file cannot be written.
    """
    from ..interchange.netbox import FILES, NETBOX_VERSION, csv_files, export_tables

    check_output_path(output, "--output", directory=True)
    checked = load_or_fail(env)
    tables = export_tables(checked.index)
    texts = csv_files(tables)
    written = []
    try:
        for i, name in enumerate(FILES, start=1):
            path = output / f"{i:02d}-{name}"
            write_atomic(path, texts[name])
            written.append({"file": str(path), "rows": len(tables[name])})
    except OSError as exc:
        err.print(f"cannot write {output}: {exc}", style="bold red", markup=False)
        raise typer.Exit(int(ExitCode.FAILURE)) from None
    if fmt is Format.json:
        print_json({"ok": True, "environment": str(env), "netbox": NETBOX_VERSION, "files": written})
        return
    for item in written:
        out.print(f"wrote {item['file']} ({item['rows']} rows)", markup=False)
