"""`clusterforge schema`: the JSON schema of the inventory, generated from the models."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ..fsutil import write_atomic
from ..model import Inventory
from .common import check_output_path, out


def schema_text() -> str:
    schema = Inventory.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "clusterforge inventory"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def schema(
    output: Path = typer.Option(Path("schemas/inventory.schema.json"), "--output", "-o"),
) -> None:
    """Write the inventory JSON schema (for editors: yaml-language-server)."""
    check_output_path(output, "--output", directory=False)
    write_atomic(output, schema_text())
    out.print(f"wrote {output}")
