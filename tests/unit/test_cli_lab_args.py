"""`lab` subcommands take ENV first like every command; the older `--env ENV` is still understood (hidden).
No lab is started: each case stops at the environment, which names the ENV that was read."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.cli.main import app


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["lab", *args], terminal_width=200)
    return result.exit_code, result.output


@pytest.mark.parametrize("args", [
    ("heal", "{env}"), ("heal", "--env", "{env}"), ("drain", "{env}", "gpu01"), ("drain", "gpu01", "--env", "{env}"),
    ("resume", "{env}", "gpu01"), ("cable", "unplug", "{env}", "gpu01/mlx5_0/1"),
    ("cable", "plug", "{env}", "gpu01/mlx5_0/1", "leaf01/3"), ("cable", "move", "{env}", "gpu01/mlx5_0/1", "leaf01/3"),
    ("cable", "replace", "{env}", "leaf01"),
])
def test_env_first_or_old_option(tmp_path: Path, args: tuple[str, ...]) -> None:
    env = tmp_path / "nolab"
    code, output = _run(*(a.replace("{env}", str(env)) for a in args))
    assert code == 1 and f"no lab is up for {env}" in " ".join(output.split())


def test_fault_env_first(tmp_path: Path) -> None:
    env = tmp_path / "missing-env"
    code, output = _run("fault", str(env), "remove", "C-00001")
    assert code == 3 and "missing-env" in output  # ENV was read as the environment, KIND and CABLE after it


@pytest.mark.parametrize("args", [("drain", "a", "b", "c"), ("cable", "plug", "x"), ("fault", "remove")])
def test_wrong_count_is_a_usage_error(args: tuple[str, ...]) -> None:
    code, output = _run(*args)
    assert code == 2 and "usage: clusterforge lab" in output


def test_status_json_is_a_hidden_alias() -> None:
    code, output = _run("status", "--help")
    assert code == 0 and "--format" in output and "--json" not in output
