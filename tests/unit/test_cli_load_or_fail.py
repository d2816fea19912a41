"""cli.loading.load_or_fail: the one "load the inventory, print its errors, exit 3" every command uses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import typer

from clusterforge.cli.console import Format
from clusterforge.cli.loading import load_inventory_or_fail, load_or_fail
from clusterforge.util.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def broken(tmp_path: Path) -> Path:
    env = tmp_path / "broken"
    shutil.copytree(ROOT / "inventories" / "lab", env)
    nodes = env / "nodes.yaml"
    nodes.write_text(nodes.read_text(encoding="utf-8") + "\nbogus_key: 1\n", encoding="utf-8")
    return env


def test_valid_environment_is_returned() -> None:
    checked = load_or_fail(ROOT / "inventories" / "lab")
    assert checked.index.nodes


def test_invalid_environment_prints_located_errors_and_exits_3(
    broken: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(typer.Exit) as exc:
        load_or_fail(broken)
    assert exc.value.exit_code == int(ExitCode.INVALID_INVENTORY) == 3
    cap = capsys.readouterr()
    assert cap.out == ""  # text: errors on stderr only
    assert "nodes.yaml:" in cap.err and "bogus_key" in cap.err
    assert "error(s) in the inventory" in cap.err


def test_json_format_prints_the_errors_document(broken: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit):
        load_or_fail(broken, Format.json)
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False
    assert any(e["file"].endswith("nodes.yaml") and e["line"] for e in doc["errors"])


def test_heading_comes_before_the_errors(broken: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit):
        load_or_fail(broken, heading="the old inventory is invalid:")
    err = capsys.readouterr().err
    assert err.index("the old inventory is invalid:") < err.index("nodes.yaml:")


def test_unplanned_load_fails_the_same_way(broken: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv, _ = load_inventory_or_fail(ROOT / "inventories" / "lab")
    assert inv.nodes
    with pytest.raises(typer.Exit) as exc:
        load_inventory_or_fail(broken)
    assert exc.value.exit_code == 3
    assert "bogus_key" in capsys.readouterr().err
