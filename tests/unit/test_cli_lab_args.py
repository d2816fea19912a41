"""`lab` subcommands take ENV first like every command; the older `--env ENV` is still understood (hidden).
No lab is started: each case stops at the environment, which names the ENV that was read."""

from __future__ import annotations

import json
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


def _fake_lab(monkeypatch: pytest.MonkeyPatch, ssh_ok: bool) -> None:
    from clusterforge.cli import lab as lab_cli
    from clusterforge.lab.lab import HostStatus, LabStatus

    st = LabStatus(lab="x", mode="podman", complete=True, network=True, ibsim=True, opensm=True,
                   hosts=[HostStatus("gpu01", "running", True), HostStatus("sm01", "running", ssh_ok)])
    monkeypatch.setattr(lab_cli, "status", lambda _dir: st)
    mapping = {"lab_network": "198.18.10.0/24", "inventory_network": "10.0.0.0/24",
               "hosts": {"gpu01": {"lab_address": "198.18.10.11", "inventory_address": "10.0.0.11"},
                         "sm01": {"lab_address": "198.18.10.12", "inventory_address": "10.0.0.12"}}}
    monkeypatch.setattr(lab_cli.labenv, "read_mapping", lambda _env: mapping)


@pytest.mark.parametrize("ssh_ok", [True, False])
def test_status_table_and_json(monkeypatch: pytest.MonkeyPatch, ssh_ok: bool) -> None:
    _fake_lab(monkeypatch, ssh_ok)
    code, output = _run("status", "inventories/lab")
    healthy = ssh_ok  # LabStatus.healthy: every host running and reachable over SSH
    assert code == (0 if healthy else 1)
    rows = [line.split() for line in output.splitlines()]
    assert ["host", "container", "ssh", "lab", "address", "inventory", "address"] in rows
    assert ["sm01", "running", "ok" if ssh_ok else "FAILED", "198.18.10.12", "10.0.0.12"] in rows
    for flag in (["--format", "json"], ["--json"]):
        result = CliRunner().invoke(app, ["lab", "status", "inventories/lab", *flag])
        assert result.exit_code == code
        doc = json.loads(result.stdout)
        assert doc["hosts"]["sm01"]["ssh"] is ssh_ok and doc["healthy"] is healthy


@pytest.mark.parametrize(("verb", "word"), [("drain", "drained"), ("resume", "resumed")])
def test_drain_resume_format_json(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, verb: str, word: str) -> None:
    from types import SimpleNamespace

    from clusterforge.cli import lab as lab_cli

    calls: list[tuple[str, bool]] = []
    monkeypatch.setattr(lab_cli, "_running", lambda env: SimpleNamespace(state_dir=tmp_path, hosts={"gpu01": {}},
                                                                         slurm_controller=""))
    monkeypatch.setattr(lab_cli, "set_drained",
                        lambda _d, host, drain, _hosts, _why=None: calls.append((host, drain)) or True)
    result = CliRunner().invoke(app, ["lab", verb, "inventories/lab", "gpu01", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"message": f"gpu01 {word}", "host": "gpu01", "state": word, "changed": True}
    assert calls == [("gpu01", verb == "drain")]
    text = CliRunner().invoke(app, ["lab", verb, "gpu01", "--env", "inventories/lab"])
    assert text.exit_code == 0 and text.stdout == f"gpu01 {word}\n"


def test_up_and_down_format_json(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from types import SimpleNamespace

    from clusterforge.cli import lab as lab_cli

    rec = SimpleNamespace(address="198.18.10.11", hcas=[("mlx5_0", None)])
    state = SimpleNamespace(lab="cf-lab", mode="podman", network_cidr="198.18.10.0/24", ibsim_address="198.18.10.2",
                            hosts={"gpu01": rec}, opensm=None)
    res = SimpleNamespace(state=state, seconds=12.34, sm_started=["sm01"], standins=1)
    monkeypatch.setattr(lab_cli.labenv, "bring_up", lambda *a, **k: res)
    monkeypatch.setattr(lab_cli.labenv, "read_mapping", lambda _env: {
        "hosts": {"gpu01": {"inventory_address": "10.0.0.11"}}, "fabric": {"switches": 7}, "without_container": []})
    result = CliRunner().invoke(app, ["lab", "up", "inventories/lab", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["hosts"] == {"gpu01": {"address": "198.18.10.11", "inventory_address": "10.0.0.11", "hcas": ["mlx5_0"]}}
    assert doc["opensm"] == ["sm01"] and doc["seconds"] == 12.3
    monkeypatch.setattr(lab_cli, "down", lambda _dir: None)
    monkeypatch.setenv("CLUSTERFORGE_LAB_ROOT", str(tmp_path))
    result = CliRunner().invoke(app, ["lab", "down", "inventories/lab", "--format", "json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["message"] == "lab down"
