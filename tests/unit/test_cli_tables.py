"""Human output as rich tables: `diff`'s change-plan steps (piped: one unwrapped row per step; on a terminal:
fitted to its width), the JSON form unchanged."""

from __future__ import annotations

import io
import json
import shlex
import shutil
from pathlib import Path
from typing import Any

from rich.console import Console
from typer.testing import CliRunner

from clusterforge.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "inventories" / "lab"


def _changed(tmp_path: Path) -> Path:
    env = tmp_path / "lab"
    shutil.copytree(LAB, env)
    fabric = env / "fabric.yaml"
    fabric.write_text(fabric.read_text(encoding="utf-8").replace("b: leaf-su01-r0/1,", "b: leaf-su01-r0/5,"),
                      encoding="utf-8")
    return env


def test_diff_steps_are_a_table_one_row_per_step_when_piped(tmp_path: Path) -> None:
    env = _changed(tmp_path)
    result = CliRunner().invoke(app, ["diff", str(LAB), str(env)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{env}: devices none; cables 1 moved")
    header = lines[1].split()
    assert header == ["#", "rack", "/", "phase", "phase", "subject", "action", "command"]
    data = json.loads(CliRunner().invoke(app, ["diff", str(LAB), str(env), "--format", "json"]).stdout)
    rows = lines[2:]
    assert len(rows) == len(data["steps"])  # nothing wrapped onto a second line
    for row, step in zip(rows, data["steps"], strict=True):
        assert row.split()[0] == str(step["n"])
        assert step["action"] in row  # markup-like text ("[rack U2]") is printed as it is
        assert step["subject"] in row
        if step["argv"]:
            assert row.endswith(shlex.join(step["argv"]))  # as a shell would read it back
        assert row == row.rstrip()
    # the rack (or phase) is named on the first row of its group only
    firsts = [r for r in rows if "rack lab-su01-r01" in r]
    assert len(firsts) == 2  # the drain group and the resume after validation


def test_diff_table_fits_a_terminal(tmp_path: Path, monkeypatch: Any) -> None:
    from clusterforge.cli import console
    from clusterforge.cli import diff as diff_cli

    buf = io.StringIO()
    tty = Console(file=buf, force_terminal=True, width=100, highlight=False)
    monkeypatch.setattr(diff_cli, "out", tty)
    monkeypatch.setattr(console, "out", tty)
    result = CliRunner().invoke(app, ["diff", str(LAB), str(_changed(tmp_path))])
    assert result.exit_code == 0, result.output
    text = buf.getvalue()
    assert "\x1b[" in text  # a terminal gets styles (the bold header)
    assert max(len(line) for line in text.splitlines() if "\x1b" not in line) <= 100


def test_diff_without_changes_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["diff", str(LAB), str(LAB)])
    assert result.exit_code == 0
    assert result.stdout == f"{LAB}: no change\n"


def test_print_table_piped_is_one_line_per_row_and_never_markup(monkeypatch: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    from clusterforge.cli import console

    buf = io.StringIO()
    monkeypatch.setattr(console, "out", Console(file=buf, force_terminal=False, width=40))
    table = Table(box=None, show_edge=False, pad_edge=False)
    table.add_column("host")
    table.add_column("unit")
    long = "opensm@" + "x" * 80 + ".service"
    table.add_row(Text("[bold]gpu01[/]"), Text(long))
    console.print_table(table)
    lines = buf.getvalue().splitlines()
    assert len(lines) == 2 and lines[1].startswith("[bold]gpu01[/]") and lines[1].endswith(long)
    assert all(line == line.rstrip() for line in lines)
