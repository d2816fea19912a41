"""`clusterforge alerts`: alerts placed from the model; the real Alertmanager on loopback with the rendered
config (level routing, a lower level inhibited while a higher one fires for the same host)."""

from __future__ import annotations

import json
import random
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cf_alertmanager import ALERTMANAGER, run_alertmanager
from cf_http import free_port
from cf_lab_inventory import LAB, lab_index
from clusterforge.alerts.view import located_alerts
from clusterforge.api import load_checked
from clusterforge.cli.alerts import alertmanagers, allowed_url
from clusterforge.cli.main import app
from clusterforge.lab.state import HostRecord, LabState
from clusterforge.rehearsal import env as labenv
from clusterforge.render.context_monitoring import ALERTMANAGER_PORT

runner = CliRunner()


def _alert(name: str, level: int, **labels: str) -> dict[str, object]:
    return {"labels": {"alertname": name, "level": str(level), **labels},
            "annotations": {"summary": f"{name} summary", "repair": f"{name} repair"}}


def test_a_port_alert_names_the_cable_ends_and_repair() -> None:
    index = lab_index()
    cable = index.cable_at[("gpu01", "mlx5_0", 1)]
    text = json.dumps([_alert("IbSymbolErrors", 2, host="gpu01", device="mlx5_0", port="1", rack="x", u="99"),
                       _alert("HbmTemperatureHigh", 3, host="gpu02", gpu="3")])
    hbm, sym = located_alerts(index, text)
    assert (hbm.alertname, hbm.level, hbm.rack, hbm.u) == ("HbmTemperatureHigh", 3, "lab-su01-r01", 6)
    assert hbm.repair == "HbmTemperatureHigh repair" and hbm.cable is None and hbm.switch is None
    assert (sym.rack, sym.u) == ("lab-su01-r01", 2)  # from the model, not the alert's labels
    assert (sym.cable, sym.a_end, sym.b_end) == (cable.id, "gpu01/mlx5_0/1", str(cable.b))
    assert (sym.host, sym.switch) == ("gpu01", cable.b.device)  # by id, as a finding names them
    assert sym.as_dict()["switch"] == cable.b.device and sym.as_dict()["cable"] == cable.id
    assert sym.repair == f"clean or reseat the optic at {cable.b.device} port {cable.b.port}: cable {cable.id}"
    assert sym.where is not None and "rack lab-su01-r01 U2" in sym.where and cable.b.device in sym.where


@pytest.mark.parametrize("text", ["{", "{}", "[1]", '[{"labels": 3}]'])
def test_a_broken_answer_is_a_clear_error(text: str) -> None:
    with pytest.raises(ValueError):
        located_alerts(lab_index(), text)


@pytest.mark.parametrize(("url", "ok"), [
    ("http://127.0.0.1:9093", True), ("http://localhost:9093/", True), ("http://[::1]:9093", True),
    ("http://198.18.10.20:9093", True), ("http://10.0.0.5:9093", False), ("http://192.168.1.1:9093", False),
    ("http://alertmanager.example.org:9093", False), ("ftp://127.0.0.1/", False),
    ("http://u:p@127.0.0.1:9093", False), ("http://127.0.0.1:9093/?x=1", False),
])
def test_only_loopback_or_lab_addresses(url: str, ok: bool) -> None:
    assert (allowed_url(url) is None) == ok


def test_a_prod_address_is_refused_before_anything_is_sent() -> None:
    result = runner.invoke(app, ["alerts", str(LAB), "--url", "http://10.1.0.10:9093"])
    assert result.exit_code == 2 and "neither loopback nor in the lab range" in result.output


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[str]:
    yield from run_alertmanager(tmp_path, "127.0.0.1", free_port())


def _lab_state(tmp_path: Path, sm01: str) -> LabState:
    """A lab of the lab inventory recorded as up, its monitoring server sm01 at `sm01` (a real LabState)."""
    return LabState(lab="cf-lab", mode="podman", state_dir=tmp_path / "state", spec_digest="", network_cidr="",
                    gateway="", ibsim_address="", netfile=tmp_path / "net",
                    hosts={"sm01": HostRecord("sm01", sm01, "subnet-manager", [])}, complete=True)


def test_the_inventory_says_where_its_alertmanager_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(labenv, "running", lambda env: None)
    assert alertmanagers(LAB, lab_index()) == ([("sm01", "http://198.18.10.18:9093")], [])
    monkeypatch.setattr(labenv, "running", lambda env: _lab_state(tmp_path, "198.18.77.9"))
    assert alertmanagers(LAB, lab_index()) == ([("sm01", "http://198.18.77.9:9093")], [])  # the lab's address
    prod = load_checked(LAB.parent / "prod").index
    monkeypatch.setattr(labenv, "running", lambda env: None)
    found, skipped = alertmanagers(LAB.parent / "prod", prod)
    assert found == [] and skipped and all("neither loopback nor in the lab range" in s for s in skipped)


def test_a_site_address_is_named_left_out_and_this_node_read_instead(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(labenv, "running", lambda env: None)
    result = runner.invoke(app, ["alerts", str(LAB.parent / "prod"), "--timeout", "2"])
    assert result.exit_code == 5, result.output
    assert "alerts: not reading sm02 (http://10.10.1.11:9093): " in result.stderr
    assert "Alertmanager unreachable: this node (http://127.0.0.1:9093): " in result.stderr


@pytest.mark.skipif(ALERTMANAGER is None, reason="Alertmanager is not installed (apt-get install "
                    "prometheus-alertmanager)")
def test_without_url_the_lab_s_monitoring_server_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the real Alertmanager on a loopback address at the port the deploy configures: the lab's sm01 there
    host = f"127.0.0.{random.randint(2, 250)}"
    with socket.socket() as probe:
        probe.bind((host, ALERTMANAGER_PORT))  # free (else the test says so, never reads another one)
    monkeypatch.setattr(labenv, "running", lambda env: _lab_state(tmp_path, host))
    for url in run_alertmanager(tmp_path, host, ALERTMANAGER_PORT):
        request = urllib.request.Request(f"{url}/api/v2/alerts", headers={"Content-Type": "application/json"},
                                         data=json.dumps([_alert("IbSymbolErrors", 2, host="gpu01",
                                                                 device="mlx5_0", port="1")]).encode())
        urllib.request.urlopen(request, timeout=10).close()
        deadline = time.monotonic() + 20
        while True:
            result = runner.invoke(app, ["alerts", str(LAB), "--format", "json"])
            if result.exit_code == 4 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert result.exit_code == 4, result.output
        data = json.loads(result.stdout)
        assert data["url"] == f"http://{host}:{ALERTMANAGER_PORT}"
        assert [(a["alertname"], a["cable"]) for a in data["alerts"]] == [("IbSymbolErrors", "C-00001")]


@pytest.mark.skipif(ALERTMANAGER is None, reason="Alertmanager is not installed (apt-get install "
                    "prometheus-alertmanager)")
def test_alerts_from_the_real_alertmanager(alertmanager: str) -> None:
    posted = [_alert("IbSymbolErrors", 2, host="gpu01", device="mlx5_0", port="1"),
              _alert("IbReceiveErrors", 1, host="gpu01", device="mlx5_0", port="1"),
              _alert("HbmTemperatureHigh", 3, host="gpu01", gpu="0"),
              _alert("IbReceiveErrors", 1, host="gpu02", device="mlx5_0", port="1")]
    request = urllib.request.Request(f"{alertmanager}/api/v2/alerts", data=json.dumps(posted).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    urllib.request.urlopen(request, timeout=10).close()
    deadline = time.monotonic() + 20
    while True:
        result = runner.invoke(app, ["alerts", str(LAB), "--url", alertmanager, "--format", "json"])
        data = json.loads(result.stdout)
        states = {(a["alertname"], a["host"]): a["state"] for a in data["alerts"]}
        if states.get(("IbSymbolErrors", "gpu01")) == "suppressed" or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert result.exit_code == 4, result.output
    assert [(a["level"], a["alertname"], a["host"]) for a in data["alerts"]] == [
        (3, "HbmTemperatureHigh", "gpu01"), (2, "IbSymbolErrors", "gpu01"),
        (1, "IbReceiveErrors", "gpu01"), (1, "IbReceiveErrors", "gpu02")]
    # level 3 on gpu01 inhibits its level 1 and 2; gpu02's level 1 stays active
    assert states == {("HbmTemperatureHigh", "gpu01"): "active", ("IbSymbolErrors", "gpu01"): "suppressed",
                      ("IbReceiveErrors", "gpu01"): "suppressed", ("IbReceiveErrors", "gpu02"): "active"}
    sym = data["alerts"][1]
    assert sym["cable"] == "C-00001" and sym["rack"] == "lab-su01-r01" and sym["u"] == 2
    text = runner.invoke(app, ["alerts", str(LAB), "--url", alertmanager])
    assert "4 alert(s)" in text.stdout and "level 3: 1, level 2: 1, level 1: 2" in text.stdout
    assert "→ clean or reseat the optic at leaf-su01-r0 port 1: cable C-00001" in text.stdout


def test_where_names_the_alertmanager_the_store_and_the_floor_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """What `make deploy` ends with: where to look."""
    monkeypatch.setattr(labenv, "running", lambda env: None)
    result = runner.invoke(app, ["alerts", str(LAB), "--where"])
    assert result.exit_code == 0, result.output
    assert "monitoring server sm01: Alertmanager http://198.18.10.18:9093, store http://198.18.10.18:8428" in \
        result.stdout
    assert f"clusterforge floor {LAB}` serves it at http://127.0.0.1:8750/" in result.stdout
