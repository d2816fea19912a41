"""Level 3's drain hook: Alertmanager's webhook payload in, deploy.reboot.drain (an argv) out, once per firing."""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cf_lab_inventory import LAB, lab_index
from clusterforge.alerts.drain import drain_targets, responder, serve
from clusterforge.cli.main import app


def _payload(*alerts: tuple[str, str, str]) -> dict[str, object]:
    return {"version": "4", "status": "firing", "receiver": "level3-page",
            "alerts": [{"status": status, "labels": {"alertname": "HbmTemperatureHigh", "level": level, "host": host}}
                       for host, level, status in alerts]}


def test_only_firing_level_3_alerts_of_declared_hosts() -> None:
    payload = _payload(("gpu01", "3", "firing"), ("gpu02", "3", "resolved"), ("gpu03", "2", "firing"),
                       ("gpu99; touch /tmp/x", "3", "firing"), ("gpu01", "3", "firing"))
    assert drain_targets(lab_index(), payload) == (["gpu01"], ["gpu99; touch /tmp/x"])
    with pytest.raises(ValueError):
        drain_targets(lab_index(), {"alerts": "x"})


def _ok(calls: list[list[str]]) -> object:
    return lambda argv: (calls.append(argv), (0, "", ""))[1]


def test_the_hook_runs_once_per_firing_with_host_substituted() -> None:
    calls: list[list[str]] = []
    hook = responder(lab_index(), ["scontrol", "update", "nodename={host}", "state=drain", "reason={reason}"],
                     run=_ok(calls), emit=lambda line: None)
    new = hook.handle(_payload(("gpu01", "3", "firing"), ("gpu05", "3", "firing")), background=False)
    assert [host for _, host, _ in new] == ["gpu01", "gpu05"]
    assert hook.handle(_payload(("gpu01", "3", "firing")), background=False) == []  # Alertmanager repeats
    why = "reason=cf-alert: level 3 HbmTemperatureHigh"
    assert calls == [["scontrol", "update", "nodename=gpu01", "state=drain", why],
                     ["scontrol", "update", "nodename=gpu05", "state=drain", why]]


def test_served_on_loopback_runs_the_real_hook(tmp_path: Path) -> None:
    record = tmp_path / "drained.txt"
    template = [sys.executable, "-c", "import sys; open(sys.argv[1], 'a').write(sys.argv[2] + '\\n')",
                str(record), "{host}"]
    journal = tmp_path / "journal.jsonl"
    hook = responder(lab_index(), template, journal=str(journal), emit=lambda line: None)
    server = serve(hook, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/drain"
        body = json.dumps(_payload(("gpu03", "3", "firing"))).encode()
        request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=30).close()
        bad = urllib.request.Request(url, data=b"not json", headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(bad, timeout=30)
    finally:
        server.shutdown()
        server.server_close()
    deadline = time.monotonic() + 30  # the response runs in its own thread: the webhook call returns at once
    while not record.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert record.read_text() == "gpu03\n"
    entries = [json.loads(line) for line in journal.read_text().splitlines()]
    assert [(e["event"], e["host"], e["exit"]) for e in entries] == [("drain", "gpu03", 0)]


def test_the_drain_hook_listens_on_loopback_only() -> None:
    result = CliRunner().invoke(app, ["alerts", str(LAB), "--drain-hook", "10.0.0.1:9095"])
    assert result.exit_code == 2 and "--drain-hook" in result.output
