"""The host directory names of `validate --from DIR` (DIR/hosts/<name>/) reach the report escaped onto one
line (issue #27, class 7): a name with a line break wrote its own line into the terminal report (a fake
finding), an escape sequence recoloured the terminal, and either made --junit's XML unreadable. Each is
written as its escape (echo.one_line) in the text report, JSON and JUnit, in HOST-UNKNOWN and in
HOST-UNREACHABLE (its reason, read from the capture, too), and in the refusal of an entry under such a name."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

from typer.testing import CliRunner

from clusterforge.cli.main import app

ROOT = Path(__file__).resolve().parents[3]
LAB = ROOT / "inventories" / "lab"

NEWLINE = "gpu99\nHOST-FAKE          error   all clean"
ESCAPE = "\x1b[31mred"
REASON = "timed out\n\x1b[2Jcleared"


def _capture(tmp_path: Path) -> Path:
    d = tmp_path / "cap"
    (d / "fabric").mkdir(parents=True)
    (d / "fabric" / "ibnetdiscover.txt").write_text("#\n")
    (d / "hosts" / NEWLINE).mkdir(parents=True)
    (d / "hosts" / NEWLINE / "ibstat.txt").write_text("\n")
    (d / "hosts" / ESCAPE).mkdir()
    (d / "hosts" / ESCAPE / "UNREACHABLE").write_text(REASON + "\n")
    return d


def _validate(cap: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["validate", str(LAB), "--from", str(cap), *extra])
    return result.exit_code, result.output


def _no_raw_control(text: str) -> None:
    assert "\x1b" not in text
    assert "HOST-FAKE" not in "".join(line[:9] for line in text.splitlines())  # no line of its own


def test_host_names_are_escaped_in_the_text_report(tmp_path: Path) -> None:
    code, output = _validate(_capture(tmp_path))
    assert code == 5, output  # an unreachable host
    _no_raw_control(output)
    assert "hosts/gpu99\\nHOST-FAKE" in output and "names no node of the inventory" in output
    assert "\\x1b[31mred" in output
    assert "timed out\\n\\x1b[2Jcleared" in output


def test_host_names_are_escaped_in_json_and_junit(tmp_path: Path) -> None:
    junit = tmp_path / "report.xml"
    code, output = _validate(_capture(tmp_path), "--format", "json", "--junit", str(junit))
    assert code == 5
    findings = json.loads(output)["findings"]
    subjects = {f["subject"] for f in findings if f["rule"] in ("HOST-UNKNOWN", "HOST-UNREACHABLE")}
    assert subjects == {"gpu99\\nHOST-FAKE          error   all clean", "\\x1b[31mred"}
    for f in findings:
        for value in (f["subject"], f["message"], f["action"] or ""):
            assert value.isprintable(), value
    xml = junit.read_text()
    assert "\x1b" not in xml
    names = {case.get("name") for case in ET.fromstring(xml).iter("testcase")}
    assert "\\x1b[31mred" in names


def test_a_refused_entry_under_such_a_name_is_escaped(tmp_path: Path) -> None:
    d = _capture(tmp_path)
    fifo = d / "hosts" / ESCAPE / "ibstat.txt"
    (d / "hosts" / ESCAPE / "UNREACHABLE").unlink()
    os.mkfifo(fifo)
    code, output = _validate(d)
    assert code == 2, output
    _no_raw_control(output)
    assert "hosts/\\x1b[31mred/ibstat.txt: not a regular file" in output
