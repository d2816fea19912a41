"""`clusterforge schema`: the JSON schema of the inventory, generated from the models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from ..errors import ExitCode
from ..fsutil import write_atomic
from ..model import Inventory
from .common import check_output_path, err, out


def schema_dict() -> dict[str, Any]:
    schema = Inventory.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "clusterforge inventory"
    return schema


def schema_text() -> str:
    return json.dumps(schema_dict(), indent=2, sort_keys=True) + "\n"


def docs_text(page: str) -> str:
    """`page` (docs/inventory.md) with its generated reference part rebuilt from the models."""
    from ..errors import RULES
    from ..schema_docs import reference, splice

    return splice(page, reference(schema_dict(), RULES))


def schema(
    output: Path = typer.Option(Path("schemas/inventory.schema.json"), "--output", "-o"),
    docs: Path | None = typer.Option(
        None, "--docs", help="also rewrite the generated reference part of this Markdown page "
        "(docs/inventory.md): every model field and the check rule ids"),
) -> None:
    """Write the inventory JSON schema (for editors: yaml-language-server)."""
    check_output_path(output, "--output", directory=False)
    if docs is not None:
        from ..schema_docs import MarkersMissing

        try:
            page = docs.read_text(encoding="utf-8")
            new = docs_text(page)
        except (OSError, MarkersMissing) as exc:
            err.print(f"--docs {docs}: {exc}", markup=False)
            raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    write_atomic(output, schema_text())
    out.print(f"wrote {output}")
    if docs is not None:
        write_atomic(docs, new)
        out.print(f"wrote {docs}")
