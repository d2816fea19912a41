"""Broken entries of an environment are named, never skipped (issue #27, class 8): a dangling symbolic link, a
link loop, a directory or a FIFO named `*.yaml` is an INV-ENV error naming the entry."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.cli.main import app
from clusterforge.inventory.env_entries import broken_entries, entry_issues

BASE = Path(__file__).parents[1] / "errors" / "_base"


def _plant(env: Path, kind: str) -> Path:
    entry = env / "extra.yaml"
    if kind == "dangling":
        entry.symlink_to(env / "moved-away.yaml")
    elif kind == "loop":
        entry.symlink_to(entry)
    elif kind == "directory":
        entry.mkdir()
    elif kind == "fifo":
        os.mkfifo(entry)
    return entry


WHY = {"dangling": "does not exist", "loop": "symbolic link loop", "directory": "a directory",
       "fifo": "not a regular file"}


@pytest.mark.parametrize("kind", sorted(WHY))
def test_each_broken_entry_is_named(tmp_path: Path, kind: str) -> None:
    entry = _plant(tmp_path, kind)
    (tmp_path / "good.yaml").write_text("site: {name: x}\n")
    (tmp_path / "link.yml").symlink_to(tmp_path / "good.yaml")  # a link to a file is fine
    (tmp_path / ".hidden.yaml").mkdir()  # hidden: not an inventory file
    (tmp_path / "notes").mkdir()
    ((issue),) = entry_issues(sorted(tmp_path.iterdir()))
    assert issue.file == str(entry) and issue.rule == "INV-ENV"
    assert WHY[kind] in issue.message
    assert broken_entries([tmp_path / "good.yaml", tmp_path / "link.yml"]) == []


def test_a_dangling_link_names_its_target_bounded(tmp_path: Path) -> None:
    entry = tmp_path / "a.yaml"
    entry.symlink_to(tmp_path / ("x" * 200 + "\nline"))
    ((issue),) = entry_issues([entry])
    assert "\n" not in issue.message and len(issue.message) < 300


@pytest.mark.parametrize("kind", sorted(WHY))
def test_check_fails_on_a_broken_entry(tmp_path: Path, kind: str) -> None:
    env = tmp_path / "env"
    shutil.copytree(BASE, env)
    entry = _plant(env, kind)
    result = CliRunner().invoke(app, ["check", str(env)])
    assert result.exit_code == 3, result.output
    assert f"{entry}: " in result.output and "[INV-ENV]" in result.output


@pytest.mark.parametrize("command", [["render", "{env}", "--output", "{tmp}/out"], ["check", "{env}"],
                                     ["init", "{env}"], ["deploy", "{env}", "--dry-run"], ["lab", "status", "{env}"],
                                     ["plan", "{env}"]])
def test_a_symlink_loop_as_the_environment_path_is_a_clean_error(tmp_path: Path, command: list[str]) -> None:
    """`render` resolved the environment's path for its name first: RuntimeError('Symlink loop') (class 5)."""
    env = tmp_path / "loop"
    env.symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(env)
    args = [a.format(env=env, tmp=tmp_path) for a in command]
    result = CliRunner().invoke(app, args, env={"CLUSTERFORGE_LAB_ROOT": str(tmp_path / "lab")})
    assert result.exit_code in (1, 2, 3), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert str(env) in result.output or "loop" in result.output
