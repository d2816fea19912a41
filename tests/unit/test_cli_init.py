"""`clusterforge init DIR` scaffolds an environment that passes `check` and plans; it never overwrites."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from clusterforge.api import load_checked
from clusterforge.cli.main import app


def test_init_scaffolds_a_checked_environment(tmp_path: Path) -> None:
    env = tmp_path / "My_Site"
    result = CliRunner().invoke(app, ["init", str(env), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["site"] == "my-site" and len(doc["files"]) == 5
    checked = load_checked(env)
    inv = checked.inv
    assert inv.site.name == "my-site" and len(inv.racks) == 1 and len(inv.profiles) == 1
    assert inv.fabric is not None and len(inv.switches) == 4 and len(inv.cables) == 8  # planned from the spec
    result = CliRunner().invoke(app, ["check", str(env), "--format", "json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["ok"] is True


def test_init_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "keep.yaml").write_text("site: {name: x}\n")
    result = CliRunner().invoke(app, ["init", str(tmp_path)])
    assert result.exit_code == 2 and "not empty" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["keep.yaml"]


def test_init_refuses_a_file_and_a_bad_name(tmp_path: Path) -> None:
    file = tmp_path / "f"
    file.write_text("x")
    assert CliRunner().invoke(app, ["init", str(file)]).exit_code == 2
    result = CliRunner().invoke(app, ["init", str(tmp_path / "new"), "--name", "Bad Name"])
    assert result.exit_code == 2 and "--name" in result.stderr and not (tmp_path / "new").exists()
