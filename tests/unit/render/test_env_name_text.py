"""The environment's directory name reaches every rendered file (the banner, a comment naming it): text from
a path, so it is escaped onto one line; a name with line breaks adds no line to a unit or /etc/hosts."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from cf_lab_inventory import LAB
from clusterforge.api import load_checked
from clusterforge.cli.main import app
from clusterforge.deploy.desired import host_plans
from clusterforge.deploy.options import DeployOptions
from clusterforge.render import banner, render
from clusterforge.util.echo import one_line

HOSTILE = "lab\nExecStart=/bin/sh -c evil\n[Injected]\u2028127.0.0.1 bank.example\x1b[2J"
INJECTED = ("ExecStart=/bin/sh -c evil", "[Injected]", "127.0.0.1 bank.example")


def _clean(path: str, text: str) -> None:
    for line in text.splitlines():
        assert line.strip() not in INJECTED, f"{path}: a line from the directory name: {line!r}"
        assert "\x1b" not in line and "\u2028" not in line, f"{path}: {line!r}"
        if "evil" in line:
            assert "\\nExecStart=" in line, f"{path}: {line!r}"  # escaped, on the line that names it


def test_banner_escapes_the_name() -> None:
    lines = banner(HOSTILE)
    assert len(lines) == 2
    assert all(line.isprintable() for line in lines)
    assert "lab\\nExecStart=/bin/sh -c evil\\n[Injected]\\u2028127.0.0.1 bank.example\\x1b[2J" in lines[0]
    assert one_line(one_line(HOSTILE)) == one_line(HOSTILE)


def test_render_with_a_hostile_environment_name() -> None:
    checked = load_checked(LAB)
    result = render(checked.index, HOSTILE)
    assert result.files
    for path, text in result.files.items():
        _clean(path, text)


def test_deploy_files_with_a_hostile_environment_name() -> None:
    checked = load_checked(LAB)
    plans = host_plans(checked.index, DeployOptions(HOSTILE))
    seen = 0
    for plan in plans.values():
        for f in plan.files:
            _clean(f.dest, f.content)
            assert "\n" not in str(f.context["environment"])
            seen += 1
    assert seen


def test_render_cli_with_a_directory_named_with_line_breaks(tmp_path: Path) -> None:
    env = tmp_path / HOSTILE.replace("/", "_")  # one directory
    shutil.copytree(LAB, env)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["render", str(env), "--output", str(out)])
    assert result.exit_code == 0, result.output
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files
    for p in files:
        _clean(str(p), p.read_text(encoding="utf-8", errors="replace"))
