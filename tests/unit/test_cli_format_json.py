"""Every command that prints answers `--format json` with one JSON document on stdout (messages go to
stderr) and the exit code of its text form."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from clusterforge.api import load_checked
from clusterforge.cli.main import app
from clusterforge.deploy.api import DeployRequest, plans_for
from clusterforge.deploy.record import update_record
from clusterforge.deploy.runner import HostResult
from clusterforge.sim.ibnetdiscover import from_index, render

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "inventories" / "lab"


def _json(args: list[str], code: int = 0) -> Any:
    result = CliRunner().invoke(app, [*args, "--format", "json"])
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def test_check_plan_render_validate(tmp_path: Path) -> None:
    assert _json(["check", str(LAB)])["summary"]["nodes"] == len(load_checked(LAB).inv.nodes)
    assert _json(["plan", "size", "--nodes", "64", "--ports-per-node", "8", "--radix", "64"])
    doc = _json(["render", str(LAB), "--output", str(tmp_path / "out")])
    assert doc and (tmp_path / "out").is_dir()
    saved = tmp_path / "saved" / "fabric"
    saved.mkdir(parents=True)
    index = load_checked(LAB).index
    (saved / "ibnetdiscover.txt").write_text(render(index, from_index(index)))
    report = _json(["validate", str(LAB), "--from", str(saved.parent), "--fabric-only"])
    assert report["findings"] == []


def test_init(tmp_path: Path) -> None:
    assert len(_json(["init", str(tmp_path / "new")])["files"]) == 5


def test_deploy(tmp_path: Path) -> None:
    env = tmp_path / "lab-copy"  # no lab runs for it; an up-to-date record: --changed touches no host
    shutil.copytree(LAB, env)
    plans = list(plans_for(env, DeployRequest(), None, load_checked(env).index).values())
    record = tmp_path / "record"
    update_record(record, plans, [HostResult(p.name, "ok") for p in plans], engine="pyinfra", env=env,
                  targets={p.name: f"ssh:{p.address}" for p in plans})
    plan_file = tmp_path / "result.json"
    doc = _json(["deploy", str(env), "--yes", "--changed", "--record", str(record), "--plan-file", str(plan_file)])
    assert doc == json.loads(plan_file.read_text()) and doc["hosts"] == {}


def test_deploy_text_summary_is_a_table() -> None:
    from clusterforge.cli import console
    from clusterforge.cli.deploy import print_summary

    with console.out.capture() as cap:
        print_summary([HostResult("gpu01", "changed"), HostResult("gpu02", "failed", error="boom")])
    lines = cap.get().splitlines()
    assert lines[0].split() == ["HOST", "STATUS", "CHANGES", "SECONDS", "DETAIL"]
    assert lines[2].split() == ["gpu02", "failed", "0", "0.00", "boom"]
    assert lines[-1] == "2 host(s), 0 change(s): changed 1, failed 1"


def test_progress_only_on_a_terminal(monkeypatch: Any) -> None:
    import io

    from rich.console import Console

    from clusterforge.cli import console
    from clusterforge.cli import progress as cli_progress

    piped = io.StringIO()
    monkeypatch.setattr(console, "err", Console(file=piped, force_terminal=False))
    with cli_progress.progress("deploy lab", total=2) as advance:
        advance("gpu01")
    assert piped.getvalue() == ""
    tty = io.StringIO()
    monkeypatch.setattr(console, "err", Console(file=tty, force_terminal=True, width=100))
    with cli_progress.progress("deploy lab", total=2) as advance:
        advance("gpu01")
        advance("gpu02")
    assert "2/2" in tty.getvalue()


JSON_BY_NATURE = {"ansible-inventory": "its output is Ansible's JSON inventory"}


def _leaves(command: Any, path: str) -> list[tuple[str, Any]]:
    if hasattr(command, "commands"):
        return [leaf for name, sub in command.commands.items() for leaf in _leaves(sub, f"{path} {name}")]
    return [(path, command)]


def test_every_command_has_format_json() -> None:
    from clusterforge.cli.main import COMMANDS, load_command

    missing = [path for name in COMMANDS for path, command in _leaves(load_command(name), name)
               if path not in JSON_BY_NATURE and not any("--format" in getattr(p, "opts", ()) for p in command.params)]
    assert missing == []


def test_ansible_inventory_is_json() -> None:
    result = CliRunner().invoke(app, ["ansible-inventory", str(LAB)])
    assert result.exit_code == 0 and "_meta" in json.loads(result.stdout)
