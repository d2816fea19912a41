"""Level 3 to a phone (issue #35 item 5; docs/monitoring.md, "Level 3 to a phone"): the documented example
(docs/examples/sms_bridge.py) behind the inventory's `page.webhook`, with the real Alertmanager and the
alertmanager.yml clusterforge renders. A level 3 alert posted as vmalert posts it reaches the bridge as
Alertmanager's webhook JSON; the gateway (a capture server here) refuses the first text, the bridge answers
502, Alertmanager sends the notification again and the text arrives once the gateway takes it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cf_http import free_port, wait_http
from cf_lab_inventory import index_of, lab_data
from clusterforge.render import render_environment

ROOT = Path(__file__).resolve().parents[3]
BRIDGE = ROOT / "docs" / "examples" / "sms_bridge.py"
AM = shutil.which("prometheus-alertmanager")
pytestmark = pytest.mark.skipif(AM is None, reason="needs prometheus-alertmanager (scripts/lab-deps.sh)")


def test_level_3_reaches_a_phone_gateway_and_alertmanager_retries(tmp_path: Path) -> None:
    ports = {k: free_port() for k in ("am", "bridge")}
    attempts: list[dict[str, Any]] = []

    class Gateway(BaseHTTPRequestHandler):  # the SMS provider: refuses the first text, takes the next
        def do_POST(self) -> None:
            attempts.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(503 if len(attempts) == 1 else 200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    gateway = ThreadingHTTPServer(("127.0.0.1", 0), Gateway)
    threading.Thread(target=gateway.serve_forever, daemon=True).start()
    data = lab_data()
    page = data["monitoring"]["alerts"]["page"]
    page.update(webhook=f"http://127.0.0.1:{ports['bridge']}/", drain=False)
    data["monitoring"]["alerts"]["group_wait_s"] = 1
    files = render_environment(index_of(data), "lab")
    conf = tmp_path / "am.yml"
    conf.write_text(files["monitoring/sm01/etc/prometheus/alertmanager.yml"])
    assert f"url: \"http://127.0.0.1:{ports['bridge']}/\"" in conf.read_text()
    procs = [subprocess.Popen([sys.executable, "-I", str(BRIDGE), "--listen", f"127.0.0.1:{ports['bridge']}",
                               "--gateway", f"http://127.0.0.1:{gateway.server_address[1]}/send", "--to", "+15550100"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        am = subprocess.Popen([str(AM), f"--config.file={conf}", f"--storage.path={tmp_path / 'am'}",
                               f"--web.listen-address=127.0.0.1:{ports['am']}", "--cluster.listen-address="],
                              stdout=(tmp_path / "am.log").open("wb"), stderr=subprocess.STDOUT)
        procs.append(am)
        wait_http(f"http://127.0.0.1:{ports['am']}/-/ready", am)
        alert = [{"labels": {"alertname": "HbmTemperatureHigh", "level": "3", "host": "gpu03", "rack": "lab-su01-r01",
                             "u": "10"},
                  "annotations": {"summary": "HBM of GPU 0 on gpu03 above 85 °C for 3 h (now 91 °C)"}}]
        request = urllib.request.Request(f"http://127.0.0.1:{ports['am']}/api/v2/alerts",
                                         data=json.dumps(alert).encode(), headers={"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=10).close()
        t0 = time.monotonic()
        while len(attempts) < 2 and time.monotonic() - t0 < 60:
            time.sleep(0.2)
        seconds = time.monotonic() - t0
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.wait(timeout=30)
        gateway.shutdown()
    log = (tmp_path / "am.log").read_text(errors="replace")
    assert len(attempts) >= 2, f"the gateway got {attempts}; alertmanager: {log[-2000:]}"
    text = "L3 HbmTemperatureHigh gpu03 (lab-su01-r01 U10) HBM of GPU 0 on gpu03 above 85 °C for 3 h (now 91 °C)"
    assert attempts[0] == attempts[1] == {"to": "+15550100", "text": text}  # the same text, sent again
    # Alertmanager's own account: the bridge's 502 seen, retried, delivered (Alertmanager 0.25, Debian 12)
    assert "Notify attempt failed, will retry later" in log and "unexpected status code 502" in log, log[-2000:]
    assert 'msg="Notify success" attempts=2' in log, log[-2000:]
    print(f"alert posted -> text taken by the gateway after one refusal: {seconds:.1f} s")


def test_the_bridge_writes_one_text_per_firing_alert() -> None:
    sys.path.insert(0, str(BRIDGE.parent))
    try:
        import sms_bridge
    finally:
        sys.path.remove(str(BRIDGE.parent))
    payload = {"version": "4", "alerts": [
        {"status": "firing", "labels": {"alertname": "GpuFallenOffBus", "level": "3", "host": "gpu07"},
         "annotations": {"summary": "x" * 300}},
        {"status": "resolved", "labels": {"alertname": "HbmTemperatureHigh", "level": "3", "host": "gpu03"}}]}
    (only,) = sms_bridge.texts(payload)
    assert only.startswith("L3 GpuFallenOffBus gpu07 xxx") and len(only) == sms_bridge.MAX_TEXT
    with pytest.raises(ValueError):
        sms_bridge.texts({"alerts": "no"})
