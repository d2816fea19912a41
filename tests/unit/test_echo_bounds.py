"""Every value echoed in an error or a finding is bounded, in text and in JSON (issue #27, classes 4 and 5):
`clusterforge.util.echo` is the one cap (MAX_ECHO characters of a quoted value, MAX_MESSAGE of a message)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cf_lab_inventory import LAB
from clusterforge.cli.main import app
from clusterforge.parse._common import shorten
from clusterforge.util.echo import MAX_ECHO, MAX_MESSAGE, cap, clip, echo
from clusterforge.util.errors import InventoryIssue, format_path

BASE = Path(__file__).parents[1] / "errors" / "_base"
BOUND = 3 * MAX_MESSAGE + 2000  # one located error and the summary line, whatever the value


def _env(tmp_path: Path, file: str, old: str, new: str) -> Path:
    env = tmp_path / "env"
    shutil.copytree(BASE, env)
    text = (env / file).read_text()
    assert old in text
    (env / file).write_text(text.replace(old, new, 1))
    return env


def test_echo_cuts_values_and_describes_huge_integers() -> None:
    assert echo("abc") == "'abc'"
    assert echo("x" * 1000) == repr("x" * MAX_ECHO + "...")
    assert shorten("x" * 1000) == echo("x" * 1000)  # the parsers' cap is this one
    huge = 10**5000 - 1
    assert echo(huge) == "<an integer of about 5,000 digits>"
    assert echo(12) == "12" and echo(True) == "True"
    assert len(echo(list(range(10_000)))) <= MAX_ECHO + 3
    assert clip("y" * 200) == "y" * MAX_ECHO + "..."
    text = "a" * 10 + "b" * 10_000_000 + "the help at the end"
    out = cap(text)
    assert len(out) <= MAX_MESSAGE and out.startswith("a" * 10) and out.endswith("the help at the end")
    assert "characters cut" in out


def test_an_issue_message_and_path_are_bounded() -> None:
    issue = InventoryIssue(("nodes", 0, "k" * 5_000_000), "v" * 50_000_000 + ": why")
    assert len(issue.message) <= MAX_MESSAGE and issue.message.endswith(": why")
    assert len(str(issue)) < 2 * MAX_MESSAGE
    assert len(format_path(("a", "b" * 10_000))) < 2 * MAX_ECHO


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_check_of_a_five_megabyte_name_prints_a_bounded_error(tmp_path: Path, fmt: str) -> None:
    env = _env(tmp_path, "nodes.yaml", "name: gpu01", "name: gpu01" + "x" * 5_000_000)
    args = ["check", str(env)] + (["--format", "json"] if fmt == "json" else [])
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 3
    assert len(result.output) < BOUND, len(result.output)
    assert "nodes.yaml:2:" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_check_of_a_huge_unknown_key_prints_a_bounded_error(tmp_path: Path, fmt: str) -> None:
    env = _env(tmp_path, "nodes.yaml", "{name: gpu01,", "{? " + "k" * 2_000_000 + " : 1, name: gpu01,")
    args = ["check", str(env)] + (["--format", "json"] if fmt == "json" else [])
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 3
    assert len(result.output) < BOUND, len(result.output)
    assert "unknown key" in result.output


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_validate_of_a_binary_capture_prints_a_bounded_report(tmp_path: Path, fmt: str) -> None:
    """An 8 MB binary capture is one unreadable 'line' (was 30 MB of JSON: the whole line as `observed`)."""
    cap_dir = tmp_path / "cap"
    (cap_dir / "fabric").mkdir(parents=True)
    (cap_dir / "fabric" / "ibnetdiscover.txt").write_bytes(b"#\n" + os.urandom(8_000_000).replace(b"\n", b"x"))
    args = ["validate", str(LAB), "--from", str(cap_dir), "--fabric-only"]
    result = CliRunner().invoke(app, args + (["--format", "json"] if fmt == "json" else []))
    assert result.exit_code == 4, result.output[:2000]
    assert len(result.output) < 20_000, len(result.output)
    if fmt == "json":
        (finding,) = [f for f in json.loads(result.output)["findings"] if f["rule"] == "PARSE"]
        assert finding["message"].startswith(f"{cap_dir}/fabric/ibnetdiscover.txt:2: ")
        assert len(finding["observed"]) <= MAX_ECHO + 3


def test_check_of_an_integer_with_thousands_of_digits_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    env = _env(tmp_path, "nodes.yaml", "u: 2,", "u: " + "9" * 5000 + ",")
    result = CliRunner().invoke(app, ["check", str(env)])
    assert result.exit_code == 3, result.output[-2000:]
    assert "nodes.yaml:2:" in result.output and "digits" in result.output
