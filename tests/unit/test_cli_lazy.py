"""The top-level command imports no command module until one runs; its listing matches the modules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge import __version__
from clusterforge.cli.main import COMMANDS, app, load_command

ROOT = Path(__file__).resolve().parents[2]


def _modules_after(argv: list[str]) -> set[str]:
    code = ("import json, sys\nfrom clusterforge.cli.main import app\n"
            f"try:\n    app({argv!r})\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(sorted(sys.modules)), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    return set(json.loads(proc.stderr.strip().splitlines()[-1]))


def test_help_imports_no_command() -> None:
    loaded = _modules_after(["--help"])
    heavy = {m for m in loaded if m.startswith(("clusterforge.cli.", "clusterforge.model", "pydantic", "pyinfra",
                                               "jinja2", "paramiko", "ansible", "networkx", "netaddr"))}
    assert heavy == {"clusterforge.cli.main"}


def test_a_command_imports_its_own_module_only() -> None:
    loaded = _modules_after(["check", str(ROOT / "inventories" / "lab")])
    commands = {m.rsplit(".", 1)[1] for m in loaded if m.startswith("clusterforge.cli.")}
    assert "check" in commands
    assert not commands & {"deploy", "lab", "alerts", "learn", "apply", "render", "diff", "validate"}
    assert not any(m.startswith(("pyinfra", "paramiko")) for m in loaded)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_listing_matches_the_command(name: str) -> None:
    command = load_command(name)
    assert command.name == name
    real = " ".join((command.help or "").split())
    assert real.startswith(COMMANDS[name].help.rstrip(".")), f"main.COMMANDS[{name!r}].help != {real[:80]!r}"


def test_help_lists_every_command() -> None:
    result = CliRunner().invoke(app, ["--help"], terminal_width=200)
    assert result.exit_code == 0
    for name in COMMANDS:
        assert f" {name} " in result.output


def test_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output == f"clusterforge {__version__}\n"


def test_unknown_command_is_a_usage_error() -> None:
    assert CliRunner().invoke(app, ["nosuch"]).exit_code == 2


def test_completion_is_on() -> None:
    # the script `--install-completion` installs (what `--show-completion bash` prints)
    proc = subprocess.run([str(Path(sys.executable).with_name("clusterforge"))], capture_output=True, text=True,
                          timeout=60, check=False, env={"_CLUSTERFORGE_COMPLETE": "source_bash",
                                                        "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0 and "_CLUSTERFORGE_COMPLETE" in proc.stdout
    help_text = CliRunner().invoke(app, ["--help"], terminal_width=200).output
    assert "--install-completion" in help_text and "--show-completion" in help_text
    # the shell asks for candidates through the same entry point: the command names, from the table
    proc = subprocess.run([str(Path(sys.executable).with_name("clusterforge"))], capture_output=True, text=True,
                          timeout=60, check=False, env={"_CLUSTERFORGE_COMPLETE": "complete_bash",
                                                        "COMP_WORDS": "clusterforge ch", "COMP_CWORD": "1",
                                                        "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0 and "check" in proc.stdout.split()
