"""The real programs end to end on loopback, with the files rendered for the lab: VictoriaMetrics holds
time-accelerated series (3 h of HBM heat, an hour of rising symbol errors) labelled as the rendered
scrape config labels them; vmalert evaluates the rendered rules; Alertmanager routes the level 3 alert
to clusterforge's drain hook (which runs the inventory's drain argv) and the level 2 alert by e-mail
to an SMTP sink; `clusterforge alerts` lists both, placed."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from cf_lab_inventory import LAB, index_of, lab_data
from cf_monitoring_e2e import SmtpSink
from clusterforge.alerts.drain import DrainHook, serve
from clusterforge.cli.main import app
from clusterforge.render import render_environment

TOOLS = {name: shutil.which(name) for name in ("victoria-metrics", "vmalert", "prometheus-alertmanager")}
pytestmark = pytest.mark.skipif(None in TOOLS.values(), reason="needs victoria-metrics (with vmalert) and "
                                "prometheus-alertmanager (scripts/lab-deps.sh)")
SRV = "monitoring/sm01/etc"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_http(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise
            time.sleep(0.2)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[dict[str, Any]]:
    ports = {k: _free_port() for k in ("vm", "vmalert", "am", "smtp", "hook")}
    data = lab_data()
    alerts = data["monitoring"]["alerts"]
    alerts["email"]["smarthost"] = f"127.0.0.1:{ports['smtp']}"
    alerts["page"]["drain_hook_port"] = ports["hook"]
    alerts["group_wait_s"] = 1
    files = render_environment(index_of(data), "lab")
    (tmp_path / "rules.yml").write_text(files[f"{SRV}/clusterforge/monitoring/rules.yml"])
    (tmp_path / "am.yml").write_text(files[f"{SRV}/prometheus/alertmanager.yml"])
    smtp = SmtpSink("127.0.0.1", ports["smtp"])  # serves from its own thread
    record = tmp_path / "drained.txt"
    drain = DrainHook(index_of(data), [sys.executable, "-c",
                                       "import sys; open(sys.argv[1], 'a').write(sys.argv[2] + '\\n')",
                                       str(record), "{host}"])
    hook = serve(drain, "127.0.0.1", ports["hook"])
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        def start(argv: list[str]) -> subprocess.Popen[bytes]:
            log = (tmp_path / f"{Path(argv[0]).name}.log").open("wb")
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
            procs.append(proc)
            return proc

        vm = start([str(TOOLS["victoria-metrics"]), f"-storageDataPath={tmp_path / 'vm'}", "-retentionPeriod=7d",
                    f"-httpListenAddr=127.0.0.1:{ports['vm']}"])
        _wait_http(f"http://127.0.0.1:{ports['vm']}/health", vm)
        am = start([str(TOOLS["prometheus-alertmanager"]), f"--config.file={tmp_path / 'am.yml'}",
                    f"--storage.path={tmp_path / 'am'}", f"--web.listen-address=127.0.0.1:{ports['am']}",
                    "--cluster.listen-address="])
        _wait_http(f"http://127.0.0.1:{ports['am']}/-/ready", am)
        yield {"ports": ports, "files": files, "smtp": smtp, "drain": drain, "record": record, "start": start,
               "tmp": tmp_path}
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.wait(timeout=30)
        smtp.shutdown()
        hook.shutdown()


def _labels(files: dict[str, str], job: str, device: str | None = None, port: str | None = None) -> dict[str, str]:
    """The labels vmagent would attach, read from the rendered scrape config (target labels + relabeling)."""
    conf = yaml.safe_load(files[f"{SRV}/clusterforge/monitoring/scrape.yml"])
    scrape = next(j for j in conf["scrape_configs"] if j["job_name"] == job)
    out = dict(scrape["static_configs"][0]["labels"])
    if device is not None:
        out |= {"device": device, "port": str(port)}
        for r in scrape.get("metric_relabel_configs", []):
            if r["regex"] == f"{device};{port}":
                out[r["target_label"]] = r["replacement"]
    return out


def _import(vm_port: int, series: list[tuple[str, dict[str, str], list[float]]], step_s: int = 60) -> None:
    now_ms = int(time.time() * 1000) - 60_000
    lines = []
    for name, labels, values in series:
        stamps = [now_ms - (len(values) - 1 - i) * step_s * 1000 for i in range(len(values))]
        lines.append(json.dumps({"metric": {"__name__": name, **labels}, "values": values, "timestamps": stamps}))
    body = ("\n".join(lines) + "\n").encode()
    request = urllib.request.Request(f"http://127.0.0.1:{vm_port}/api/v1/import", data=body, method="POST")
    urllib.request.urlopen(request, timeout=30).close()
    urllib.request.urlopen(f"http://127.0.0.1:{vm_port}/internal/force_flush", timeout=30).close()


def test_heat_pages_and_drains_symbol_errors_mail_naming_the_cable(stack: dict[str, Any]) -> None:
    ports, files = stack["ports"], stack["files"]
    gpu = {**_labels(files, "dcgm/gpu03"), "gpu": "0"}
    port = _labels(files, "node/gpu05", "mlx5_1", "1")
    assert port["cable"] and port["leaf"]
    _import(ports["vm"], [
        ("DCGM_FI_DEV_MEMORY_TEMP", gpu, [91.0] * 200),                       # 3 h 20 min above 85 °C
        ("DCGM_FI_DEV_MEMORY_TEMP", {**gpu, "gpu": "1"}, [70.0] * 200),
        ("node_infiniband_symbol_error_total", port, [2.0 * i for i in range(70)]),  # rising for 70 min
        ("cf_ib_sm_master", _labels(files, "node/sm01"), [1.0] * 10),
    ])
    stack["start"]([str(TOOLS["vmalert"]), f"-rule={stack['tmp'] / 'rules.yml'}",
                    f"-datasource.url=http://127.0.0.1:{ports['vm']}",
                    f"-remoteWrite.url=http://127.0.0.1:{ports['vm']}",
                    f"-notifier.url=http://127.0.0.1:{ports['am']}", "-evaluationInterval=2s",
                    f"-httpListenAddr=127.0.0.1:{ports['vmalert']}"])
    drain, smtp = stack["drain"], stack["smtp"]
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if drain.drained and smtp.mails("IbSymbolErrors"):
            break
        time.sleep(1)
    logs = {p.name: p.read_text(errors="replace")[-3000:] for p in stack["tmp"].glob("*.log")}
    assert drain.drained == {"gpu03": 0}, f"drain hook: {drain.log}; logs: {logs}"
    assert stack["record"].read_text() == "gpu03\n"  # the inventory's drain argv ran, for that host only
    mails = [m for _, m in smtp.mails("IbSymbolErrors")]
    assert mails, f"no e-mail; got {len(smtp.messages)} message(s)"
    assert port["cable"] in mails[0] and "oncall@lab.invalid" in mails[0]
    result = CliRunner().invoke(app, ["alerts", str(LAB), "--url", f"http://127.0.0.1:{ports['am']}",
                                      "--format", "json"])
    assert result.exit_code == 4, result.output
    listed = {(a["alertname"], a["host"]): a for a in json.loads(result.stdout)["alerts"]}
    assert set(listed) == {("HbmTemperatureHigh", "gpu03"), ("IbSymbolErrors", "gpu05")}
    sym = listed[("IbSymbolErrors", "gpu05")]
    assert (sym["cable"], sym["rack"], sym["level"]) == (port["cable"], port["rack"], 2)
    assert sym["repair"].startswith(f"clean or reseat the optic at {port['leaf']} port {port['leaf_port']}: "
                                    f"cable {port['cable']}")
