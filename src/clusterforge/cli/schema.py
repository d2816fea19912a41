"""`clusterforge schema`: the JSON schema of the inventory, generated from the models."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from ..model import Inventory
from ..util.errors import ExitCode
from ..util.fsutil import write_atomic
from .console import Format, err, out
from .loading import check_output_path


def schema_dict() -> dict[str, Any]:
    schema = Inventory.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "clusterforge inventory"
    return schema


def schema_text() -> str:
    return json.dumps(schema_dict(), indent=2, sort_keys=True) + "\n"


def docs_text(page: str) -> str:
    """`page` (docs/inventory.md) with its generated reference part rebuilt from the models."""
    from ..inventory.schema_docs import reference, splice
    from ..util.errors import RULES

    return splice(page, reference(schema_dict(), RULES))


DEFAULT_OUTPUT = Path("schemas/inventory.schema.json")


def schema(
    output: Path | None = typer.Option(None, "--output", "-o", help=f"where to write it (default {DEFAULT_OUTPUT}; "
                                       "with --format json only when given)"),
    docs: Path | None = typer.Option(
        None, "--docs", help="also rewrite the generated reference part of this Markdown page "
        "(docs/inventory.md): every model field and the check rule ids"),
    fmt: Format = typer.Option(Format.text, "--format", help="text (write the file) or json (print the JSON "
                               "Schema on stdout)"),
) -> None:
    """Write the inventory JSON schema (for editors: yaml-language-server); `--format json` prints it."""
    if output is None and fmt is Format.text:
        output = DEFAULT_OUTPUT
    if output is not None:
        check_output_path(output, "--output", directory=False)
    if docs is not None:
        from ..inventory.schema_docs import MarkersMissing

        try:
            page = docs.read_text(encoding="utf-8")
            new = docs_text(page)
        except (OSError, MarkersMissing) as exc:
            err.print(f"--docs {docs}: {exc}", markup=False)
            raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    text = schema_text()
    # with --format json stdout is the schema alone: what was written is said on stderr
    said = out if fmt is Format.text else err
    if output is not None:
        write_atomic(output, text)
        said.print(f"wrote {output}", markup=False)
    if docs is not None:
        write_atomic(docs, new)
        said.print(f"wrote {docs}", markup=False)
    if fmt is Format.json:
        sys.stdout.write(text)
