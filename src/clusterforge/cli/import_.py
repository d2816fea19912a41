"""`clusterforge import netbox DIR --output ENVDIR`: NetBox CSVs (as `export netbox` writes them) into an
environment."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

from ..util.errors import ExitCode
from ..util.fsutil import write_atomic
from .console import Format, err, out, print_json
from .loading import check_output_path

app = typer.Typer(no_args_is_help=True, help="Import another tool's data into an environment (NetBox CSV).")

SECTIONS = {
    "site.yaml": ("site", "racks"),
    "hardware.yaml": ("profiles",),
    "nodes.yaml": ("nodes", "switches"),
    "cabling.yaml": ("patch_panels", "trunks", "cables"),
}


@app.command("netbox")
def netbox(
    source: Path = typer.Argument(..., help="directory of NetBox CSVs (`NN-<object>.csv` or `<object>.csv`)"),
    output: Path = typer.Option(..., "--output", "-o", help="environment directory to write"),
    fmt: Format = typer.Option(Format.text, "--format", help="text or json"),
) -> None:
    """Build an environment from NetBox CSVs: site, racks, profiles, nodes, switches, panels, trunks, cables.

    The result holds what NetBox holds; add the addressing, services and software sections by hand
    (or copy them). Exit codes: 0 written, 2 unreadable or inconsistent CSVs or bad --output.
    """
    import yaml

    from ..catalog import catalog
    from ..interchange.netbox import FILES, NetboxImportError
    from ..interchange.netbox_import import import_tables, read_tables

    check_output_path(output, "--output", directory=True)
    if not source.is_dir():
        err.print(f"{source}: not a directory of NetBox CSVs", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    texts: dict[str, str] = {}
    paths: dict[str, Path] = {}  # FILES name -> the file read (`NN-` prefix or not), for error messages
    for path in sorted(source.glob("*.csv")):
        name = re.sub(r"^\d+-", "", path.name)
        if name in FILES:
            paths[name] = path
            try:
                texts[name] = path.read_text(encoding="utf-8-sig")
            except (OSError, UnicodeDecodeError) as exc:
                err.print(f"{path}: cannot read: {exc}", markup=False)
                raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    try:
        inv = import_tables(read_tables(texts), catalog())
    except NetboxImportError as exc:
        where = f"{paths.get(exc.file, source / exc.file)}" + (f":{exc.line}" if exc.line is not None else "")
        err.print(f"{where}: {exc.message}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    written = []
    for file, keys in SECTIONS.items():
        data: dict[str, Any] = {k: inv[k] for k in keys if inv.get(k)}
        if not data:
            continue
        text = "# imported from NetBox CSVs by `clusterforge import netbox`\n" + yaml.safe_dump(
            data, sort_keys=False, default_flow_style=None, width=200, allow_unicode=True)
        write_atomic(output / file, text)
        written.append(str(output / file))
    if fmt is Format.json:
        print_json({"ok": True, "output": str(output), "files": written,
                    "counts": {k: len(v) for k, v in inv.items() if isinstance(v, list)}})
        return
    for file_name in written:
        out.print(f"wrote {file_name}", markup=False)
    out.print(f"check it: clusterforge check {output}", markup=False)
