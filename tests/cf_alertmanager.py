"""The real Alertmanager on loopback with the lab's rendered configuration, for the tests that read alerts from it
(`clusterforge alerts`, the floor page): started on an address and port, stopped whatever happens."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from cf_http import wait_http
from cf_lab_inventory import lab_index
from clusterforge.render import render_environment

ALERTMANAGER = shutil.which("prometheus-alertmanager")


def run_alertmanager(tmp_path: Path, host: str, port: int) -> Iterator[str]:
    """Yield the running Alertmanager's base URL (a generator: use it as a fixture's body or a `for`)."""
    assert ALERTMANAGER is not None
    conf = tmp_path / "alertmanager.yml"
    conf.write_text(render_environment(lab_index(), "lab")["monitoring/sm01/etc/prometheus/alertmanager.yml"])
    url = f"http://{host}:{port}"
    proc = subprocess.Popen(
        [ALERTMANAGER, f"--config.file={conf}", f"--storage.path={tmp_path / 'data'}",
         f"--web.listen-address={host}:{port}", "--cluster.listen-address="],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(f"{url}/-/ready", proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def post_alerts(url: str, alerts: list[dict[str, object]]) -> None:
    """Alerts into Alertmanager as vmalert sends them (POST /api/v2/alerts)."""
    request = urllib.request.Request(f"{url}/api/v2/alerts", data=json.dumps(alerts).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    urllib.request.urlopen(request, timeout=10).close()
