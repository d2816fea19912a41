"""The exit codes a command's help names are the real ones: members of errors.ExitCode (or 130, Ctrl-C),
listed in docs/commands.md, and for deploy the code its outcome returns."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from clusterforge.cli.main import COMMANDS, load_command
from clusterforge.deploy.api import EXIT_HOSTS_FAILED, EXIT_UNREACHABLE, DeployOutcome
from clusterforge.deploy.runner import HostResult
from clusterforge.util.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "commands.md").read_text()
DOCUMENTED = {int(m) for m in re.findall(r"^\| (\d+) \|", DOC, re.MULTILINE)}
_EXIT = re.compile(r"\bexits? (\d+)\b|\(exit (\d+)\)")


def _leaves(command: Any, path: str) -> list[tuple[str, Any]]:
    if hasattr(command, "commands"):
        return [leaf for name, sub in command.commands.items() for leaf in _leaves(sub, f"{path} {name}")]
    return [(path, command)]


def _help(command: Any) -> str:
    parts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
    return " ".join(" ".join(parts).split())


LEAVES = [leaf for name in COMMANDS for leaf in _leaves(load_command(name), name)]


def test_the_table_is_exit_code() -> None:
    assert {int(c) for c in ExitCode} | {130} == DOCUMENTED


@pytest.mark.parametrize(("path", "command"), LEAVES, ids=[p for p, _ in LEAVES])
def test_help_names_documented_codes(path: str, command: Any) -> None:
    named = {int(a or b) for a, b in _EXIT.findall(_help(command))}
    assert named <= DOCUMENTED, f"`{path} --help` names exit code(s) {sorted(named - DOCUMENTED)} not documented"


def test_deploy_help_says_what_the_outcome_returns() -> None:
    text = _help(load_command("deploy"))
    failed = DeployOutcome([HostResult("a", "ok"), HostResult("b", "failed", error="x")])
    unreachable = DeployOutcome([HostResult("a", "unreachable")])
    assert failed.exit_code == EXIT_HOSTS_FAILED == 1 and unreachable.exit_code == EXIT_UNREACHABLE == 5
    assert f"exit {failed.exit_code} when a host failed" in text
    assert f"{unreachable.exit_code} unreachable" in text
