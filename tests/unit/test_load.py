from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.api import load_checked, summary
from clusterforge.cli.main import app
from clusterforge.cli.schema import schema_text
from clusterforge.inventory.load import load_inventory
from clusterforge.util.errors import InventoryInvalid

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("env", ["lab", "staging", "prod"])
def test_example_inventories_check_clean(env: str) -> None:
    checked = load_checked(ROOT / "inventories" / env)
    counts = summary(checked.index)
    assert counts["nodes"] > 0 and counts["cables"] > 0


def test_prod_is_the_design_brief_cluster() -> None:
    idx = load_checked(ROOT / "inventories" / "prod").index
    gpu_nodes = [n for n in idx.inv.nodes if n.role == "compute"]
    assert len(gpu_nodes) == 256
    hw = idx.hardware[gpu_nodes[0].name]
    assert hw.gpus is not None and hw.gpus.count == 8
    rates = [p.rate for h in hw.hcas for p in h.ports]
    assert rates == ["HDR", "HDR"]  # dual-port HDR200: 400 Gb/s aggregate
    assert {s.model for s in idx.inv.switches} == {"QM8700"}
    assert idx.inv.opensm is not None and len(idx.inv.opensm.sm_nodes) == 2


def test_list_sections_merge_across_files_and_keep_locations(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("site: {name: s}\nracks:\n  - {name: r1, row: x, position: 0}\n")
    (tmp_path / "b.yaml").write_text(
        "racks:\n  - {name: r2, row: x, position: 1}\n  - {name: r3, row: x, position: 2, u_height: 0}\n"
    )
    with pytest.raises(InventoryInvalid) as exc:
        load_inventory(tmp_path)
    (issue,) = exc.value.issues
    assert issue.path == ("racks", 2, "u_height")
    assert issue.file is not None and issue.file.endswith("b.yaml")
    assert (issue.line, issue.col) == (3, 47)  # the value `0`


def test_all_structural_errors_are_collected(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(
        "site: {name: s, colour: red}\nracks:\n  - {name: r1, row: x, position: -1}\n"
        "  - {name: 'bad name', row: x, position: 0}\n"
    )
    with pytest.raises(InventoryInvalid) as exc:
        load_inventory(tmp_path)
    paths = {i.path for i in exc.value.issues}
    assert paths == {("site", "colour"), ("racks", 0, "position"), ("racks", 1, "name")}


def test_empty_and_missing_environment(tmp_path: Path) -> None:
    with pytest.raises(InventoryInvalid, match="inventory error"):
        load_inventory(tmp_path)
    with pytest.raises(InventoryInvalid):
        load_inventory(tmp_path / "nope")


def test_schema_line_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(
        "# yaml-language-server: $schema=../../schemas/inventory.schema.json\nsite: {name: s}\n"
    )
    inv, _ = load_inventory(tmp_path)
    assert inv.site.name == "s"


def test_committed_schema_is_current() -> None:
    committed = (ROOT / "schemas" / "inventory.schema.json").read_text()
    assert committed == schema_text(), "schemas/inventory.schema.json is stale: run `make schema`"


def test_check_json_output() -> None:
    result = CliRunner().invoke(app, ["check", str(ROOT / "inventories" / "lab"), "--format", "json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["ok"] is True
    assert data["summary"]["nodes"] == 11
    assert data["summary"]["hca_ports"] == 19


def test_check_json_errors(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("site: {name: s}\nnodes:\n  - {name: n1, rack: nope, u: 1}\n")
    result = CliRunner().invoke(app, ["check", str(tmp_path), "--format", "json"])
    assert result.exit_code == 3
    data = json.loads(result.stdout)
    assert data["ok"] is False
    assert data["errors"][0]["path"] == ["nodes", 0, "rack"]
    assert data["errors"][0]["line"] == 3
