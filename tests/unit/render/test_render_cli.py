"""`clusterforge render`: summary, JSON, placeholder warnings, exit 3 on an invalid inventory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from _render_common import LAB
from typer.testing import CliRunner

from clusterforge.cli.main import app

runner = CliRunner()


def test_render_lab_json(tmp_path: Path) -> None:
    env = tmp_path / "lab"
    shutil.copytree(LAB, env)
    out = tmp_path / "out"
    result = runner.invoke(app, ["render", str(env), "--output", str(out), "--format", "json", "--no-svg"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] and data["environment"] == "lab" and data["files"] == 88
    assert data["kinds"]["opensm/opensm.conf"] == 1 and data["kinds"]["nccl/nccl.conf"] == 8
    assert data["kinds"]["slurm/nodecheck.json"] == 8 and data["kinds"]["slurm/cf-nodecheck.py"] == 1
    assert data["placeholders"]["opensm/sm01/root-guids.conf"] == ["spine01", "spine02"]
    assert (out / "opensm/sm01/opensm.conf").is_file()
    again = runner.invoke(app, ["render", str(env), "--output", str(out), "--format", "json", "--no-svg"])
    assert json.loads(again.stdout)["unchanged"] == 88


def test_render_text_names_placeholder_files_outside_the_lab(tmp_path: Path) -> None:
    env = tmp_path / "qa"
    shutil.copytree(LAB, env)
    result = runner.invoke(app, ["render", str(env), "--output", str(tmp_path / "out"), "--no-svg"])
    assert result.exit_code == 0, result.output
    assert "qa: 88 files in" in result.stdout
    assert "warning: 6 files contain placeholder GUIDs" in result.stderr
    assert "  opensm/sm01/root-guids.conf: spine01, spine02" in result.stderr


def test_render_invalid_inventory_exits_3(tmp_path: Path) -> None:
    env = tmp_path / "lab"
    shutil.copytree(LAB, env)
    with (env / "fabric.yaml").open("a") as fh:
        fh.write("  - {id: C-00999, a: gpu01/mlx5_0/1, b: leaf-su01-r0/9, media: AOC, length_m: 10}\n")
    result = runner.invoke(app, ["render", str(env), "--output", str(tmp_path / "out")])
    assert result.exit_code == 3
    assert "already used by cable C-00001" in result.stderr
    assert not (tmp_path / "out").exists()
