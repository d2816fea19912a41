"""Progress bars of long commands (plan, render; collection in tests/unit/collect): on stderr when it is a
terminal, never on stdout, never when stderr is piped; `--format json` stays one JSON document."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from clusterforge.cli import console
from clusterforge.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "inventories" / "lab"

COMMANDS = {
    "render": (["render", str(LAB), "--no-svg", "--format", "json", "--output", "{tmp}/out"], "render lab"),
    "plan": (["plan", "show", str(LAB), "--format", "json", "--export", "{tmp}/export"], "plan lab"),
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_terminal_shows_the_bar_and_stdout_stays_json(name: str, tmp_path: Path, monkeypatch: Any) -> None:
    argv, label = COMMANDS[name]
    tty = io.StringIO()
    monkeypatch.setattr(console, "err", Console(file=tty, force_terminal=True, width=120))
    result = CliRunner().invoke(app, [a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)  # one document, no bar in it
    assert "\x1b[" not in result.stdout and label not in result.stdout
    shown = tty.getvalue()
    assert label in shown and "\x1b[" in shown


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_piped_stderr_has_no_bar(name: str, tmp_path: Path) -> None:
    argv, label = COMMANDS[name]
    result = CliRunner().invoke(app, [a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)
    assert label not in result.stderr and "\x1b[" not in result.stderr
