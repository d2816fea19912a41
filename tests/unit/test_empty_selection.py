"""An empty host selection is refused, never widened to every host (#40): `--limit ''` (an unset `$RACK` in a
script), `','` and `' , '` on every command that takes one, and a day-2 step that carries one. Each refusal
exits 2 naming the expression as given, before anything is contacted."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cf_lab_inventory import index_of, lab_data
from clusterforge.cli.main import app
from clusterforge.day2 import ChangePlan, change_plan
from clusterforge.day2.verify import verify
from clusterforge.inventory.selection import SelectionError, limit_tokens, select_nodes

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "inventories" / "lab"
PROD = ROOT / "inventories" / "prod"
EMPTY = ["", ",", " , ", " ,, "]


def _invoke(args: list[str]) -> Any:
    return CliRunner().invoke(app, args)


def _refused(result: Any, given: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "--limit selects no host" in result.output
    assert repr(given) in result.output  # the expression as given


@pytest.mark.parametrize("given", EMPTY)
def test_limit_tokens_refuses_an_empty_selection(given: str) -> None:
    with pytest.raises(SelectionError, match="selects no host"):
        limit_tokens([given])
    with pytest.raises(SelectionError, match="selects no host"):
        limit_tokens(given)
    with pytest.raises(SelectionError, match="selects no host"):
        limit_tokens([given, given])  # repeated, all empty


def test_limit_tokens_keeps_what_names_something() -> None:
    assert limit_tokens(["", "gpu01"]) == ("gpu01",)  # one empty repeat among real ones is harmless
    assert limit_tokens("gpu[01-02], sm01") == ("gpu[01-02]", "sm01")
    # and what they name is never empty: each token must match a node
    assert select_nodes(index_of(lab_data()), limit_tokens("gpu01")) == ["gpu01"]


@pytest.fixture
def no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any deploy or lab start reached here would be a widened selection: fail loudly instead of contacting."""
    import clusterforge.cli.deploy as cli_deploy
    import clusterforge.rehearsal.env as labenv

    def contacted(*args: object, **kwargs: object) -> None:
        raise AssertionError("an empty --limit reached the engine")

    monkeypatch.setattr(cli_deploy, "_run_engine", contacted)
    monkeypatch.setattr(labenv, "bring_up", contacted)


@pytest.mark.parametrize("given", EMPTY)
@pytest.mark.parametrize("extra", [["--dry-run"], ["--no-lab", "--yes"]], ids=["dry-run", "real"])
def test_deploy_refuses_an_empty_limit(given: str, extra: list[str], no_engine: None) -> None:
    _refused(_invoke(["deploy", str(PROD), "--limit", given, *extra]), given)


def test_deploy_refuses_an_empty_limit_among_empty_repeats(no_engine: None) -> None:
    _refused(_invoke(["deploy", str(LAB), "--limit", "", "--limit", ",", "--dry-run"]), "")


@pytest.mark.parametrize("given", EMPTY)
def test_lab_up_refuses_an_empty_limit(given: str, no_engine: None) -> None:
    _refused(_invoke(["lab", "up", str(LAB), "--limit", given]), given)


@pytest.mark.parametrize("given", EMPTY)
def test_ansible_inventory_refuses_an_empty_limit(given: str) -> None:
    _refused(_invoke(["ansible-inventory", str(LAB), "--limit", given]), given)


@pytest.mark.parametrize(("given", "says"), [("gpu[01-", "not a host range"), ("gpu99", "gpu99"),
                                             ("gpu[04-01]", "runs backwards"), ("gpu[0-99999999999]", "names more")])
def test_ansible_inventory_bad_limit_is_a_clean_refusal(given: str, says: str) -> None:
    result = _invoke(["ansible-inventory", str(LAB), "--limit", given])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert result.output.startswith("ansible-inventory: ")
    assert says in result.output


def test_ansible_inventory_limit_still_selects() -> None:
    import json

    result = _invoke(["ansible-inventory", str(LAB), "--limit", "gpu[01-02]"])
    assert result.exit_code == 0, result.output
    assert sorted(json.loads(result.output)["_meta"]["hostvars"]) == ["gpu01", "gpu02"]


@pytest.mark.parametrize("given", EMPTY)
def test_validate_refuses_an_empty_limit(given: str, tmp_path: Path) -> None:
    # with saved outputs: an empty --limit would report on no host and pass; it is refused before reading them
    _refused(_invoke(["validate", str(LAB), "--from", str(tmp_path), "--limit", given]), given)


@pytest.mark.parametrize("given", EMPTY)
@pytest.mark.parametrize("command", [
    ["flash", "--model", "ConnectX-6", "--version", "20.39.2048"],
    ["activate", "--how", "reboot"],
], ids=["flash", "activate"])
def test_firmware_refuses_an_empty_limit(given: str, command: list[str]) -> None:
    _refused(_invoke(["firmware", command[0], str(PROD), *command[1:], "--limit", given, "--dry-run"]), given)


def _emptied(plan: ChangePlan, phase: str, value: str) -> ChangePlan:
    """`plan` with the first `phase` step's --limit replaced by `value` (given to it when it has none)."""
    steps = list(plan.steps)
    i = next(k for k, s in enumerate(steps) if s.phase == phase)
    argv = list(steps[i].argv)
    if "--limit" in argv:
        argv[argv.index("--limit") + 1] = value
    else:
        argv += ["--limit", value]
    steps[i] = dataclasses.replace(steps[i], argv=tuple(argv))
    return dataclasses.replace(plan, steps=tuple(steps))


@pytest.mark.parametrize("given", EMPTY)
@pytest.mark.parametrize("phase", ["deploy", "validate"])
def test_a_plan_step_with_an_empty_limit_is_rejected(given: str, phase: str) -> None:
    data = lab_data()
    nodes = {n["name"]: n for n in data["nodes"]}
    nodes["gpu04"].update(rack="lab-su02-r01", u=2)  # two nodes swap racks: a plan with deploys and validates
    nodes["gpu05"].update(rack="lab-su01-r01", u=14)
    plan = change_plan(index_of(lab_data()), index_of(data), "inventories/lab", "lab")
    assert verify(plan, index_of(lab_data()), index_of(data)) == []
    found = verify(_emptied(plan, phase, given), index_of(lab_data()), index_of(data))
    assert any(v.rule == "PHASE" and "selects no host" in v.message for v in found), found


@pytest.mark.parametrize("target", ["deploy", "lab-up"])
@pytest.mark.parametrize("given", ["", " "])
def test_make_refuses_an_empty_limit(target: str, given: str) -> None:
    run = subprocess.run(["make", "-n", "-C", str(ROOT), target, f"LIMIT={given}"], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "LIMIT= is empty: it selects no host" in run.stderr
    assert "clusterforge deploy" not in run.stdout and "lab up" not in run.stdout


def test_make_quotes_a_range_as_one_word() -> None:
    run = subprocess.run(["make", "-n", "-C", str(ROOT), "deploy", "LIMIT=gpu[01-02]"], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "deploy inventories/lab --engine pyinfra --limit 'gpu[01-02]'" in run.stdout
