"""What the sizing decided beyond the request (rail planes asked for but not needed: one layer of spines
serves every leaf) is said in the text output too, not only in --format json's `notes` (issue #21, item 3):
`plan size` prints each note, `plan compare` each design's under the table (and in its JSON)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from clusterforge.cli.main import app

ONE_UNIT = ["--nodes", "64", "--ports-per-node", "8", "--radix", "64", "--su-size", "64", "--planes", "rail"]


def _run(*args: str) -> str:
    result = CliRunner().invoke(app, ["plan", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_plan_size_text_says_planes_were_not_needed() -> None:
    data = json.loads(_run("size", *ONE_UNIT, "--format", "json"))
    assert data["planes"] == 1 and data["switches"]["spine"] == 8 and len(data["notes"]) == 1
    text = _run("size", *ONE_UNIT)
    assert "switches: 16 leaf, 8 spine, 0 core" in text
    lines = text.splitlines()
    assert f"note: {data['notes'][0]}" in lines, text
    assert "rail planes not needed" in data["notes"][0] and "16 leaves" in data["notes"][0]


def test_plan_size_text_has_no_note_where_planes_are_planned() -> None:
    args = ["--nodes", "320", "--ports-per-node", "8", "--radix", "64", "--su-size", "64", "--planes", "rail"]
    data = json.loads(_run("size", *args, "--format", "json"))
    assert data["planes"] == 8 and data["notes"] == []
    text = _run("size", *args)
    assert "note:" not in text and "8 rail planes of 1 rail(s)" in text


def test_plan_compare_says_which_design_needed_no_planes() -> None:
    args = ["compare", "--nodes", "64", "--design", "R=A:planes=rail", "--design", "A"]
    designs = {d["option"]: d for d in json.loads(_run(*args, "--format", "json"))["designs"]}
    assert designs["R"]["planes"] == 1 and designs["A"]["notes"] == []
    assert len(designs["R"]["notes"]) == 1 and "rail planes not needed" in designs["R"]["notes"][0]
    text = _run(*args)
    assert f"note (R): {designs['R']['notes'][0]}" in " ".join(text.split()), text
    assert "note (A)" not in text
