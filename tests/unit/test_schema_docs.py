"""docs/inventory.md's reference part is generated from the models and must not drift from them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clusterforge.cli.main import app
from clusterforge.cli.schema import docs_text, schema_dict
from clusterforge.inventory.schema_docs import BEGIN, END, MarkersMissing, reference, splice
from clusterforge.util.errors import RULES

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "inventory.md"


def test_committed_reference_is_current() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert page == docs_text(page), "docs/inventory.md's reference is stale: run `make docs`"


def test_every_model_field_has_a_description() -> None:
    schema = schema_dict()
    missing = [
        f"{name}.{field}"
        for name, spec in [("Inventory", schema), *schema["$defs"].items()]
        for field, prop in spec.get("properties", {}).items()
        if not str(prop.get("description", "")).strip()
    ]
    assert not missing, f"{len(missing)} field(s) without a description: {', '.join(missing)}"


def test_every_field_and_rule_is_in_the_reference() -> None:
    schema = schema_dict()
    text = reference(schema, RULES)
    for name, spec in [("Inventory", schema), *schema["$defs"].items()]:
        assert f'<a id="{name.lower()}"></a>{name}' in text
        for field in spec.get("properties", {}):
            assert f"| `{field}` |" in text, f"{name}.{field}"
    for rule in RULES:
        assert f"| `{rule}` |" in text
    # a field's type, default and description land in its row
    assert "| `u_height` | integer (≥ 1, ≤ 60) | `42` | rack units of the rack |" in text
    assert "| `media` | `DAC` / `ACC` / `AOC` / `fiber` | *required* |" in text


def test_splice_keeps_the_hand_written_parts() -> None:
    page = f"# intro\n\nhand\n\n{BEGIN}\nold\n{END}\n\n## after\n"
    new = splice(page, "NEW\n")
    assert new == f"# intro\n\nhand\n\n{BEGIN}\n\nNEW\n\n{END}\n\n## after\n"
    assert splice(new, "NEW\n") == new
    with pytest.raises(MarkersMissing):
        splice("# no markers\n", "x")


def test_schema_docs_option_rewrites_only_the_generated_part(tmp_path: Path) -> None:
    page = tmp_path / "inventory.md"
    page.write_text(f"# mine\n\n{BEGIN}\nstale\n{END}\ntail\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["schema", "--output", str(tmp_path / "s.json"), "--docs", str(page)])
    assert result.exit_code == 0, result.output
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# mine\n\n") and text.endswith(f"{END}\ntail\n") and "stale" not in text
    assert "### <a id=\"rack\"></a>Rack" in text


def test_schema_docs_option_refuses_a_page_without_markers(tmp_path: Path) -> None:
    page = tmp_path / "inventory.md"
    page.write_text("# mine\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["schema", "--output", str(tmp_path / "s.json"), "--docs", str(page)])
    assert result.exit_code == 2
    assert "BEGIN generated" in result.output and "Traceback" not in result.output
    assert page.read_text(encoding="utf-8") == "# mine\n" and not (tmp_path / "s.json").exists()


def test_schema_format_json_prints_the_schema_and_writes_nothing(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["schema", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == schema_dict()
    assert not (tmp_path / "schemas").exists()  # the default file is written by the text form only


def test_schema_format_json_with_output_writes_it_too(tmp_path: Path) -> None:
    target = tmp_path / "s.json"
    result = CliRunner().invoke(app, ["schema", "--format", "json", "--output", str(target)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json.loads(target.read_text(encoding="utf-8")) == schema_dict()
    assert "wrote" not in result.stdout and f"wrote {target}" in result.stderr
