"""The real programs end to end on loopback, with the files rendered for the lab: VictoriaMetrics holds
time-accelerated series (3 h of HBM heat, an hour of rising symbol errors) labelled as the rendered
scrape config labels them; vmalert evaluates the rendered rules; Alertmanager routes the level 3 alert
to clusterforge's drain hook (which runs the inventory's drain argv) and the level 2 alert by e-mail
to an SMTP sink; `clusterforge alerts` lists both, placed."""

from __future__ import annotations

import json
import shutil
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

from cf_http import free_port, wait_http
from cf_lab_inventory import LAB, index_of, lab_data
from cf_monitoring_e2e import SmtpSink
from clusterforge.alerts.drain import responder, serve
from clusterforge.cli.main import app
from clusterforge.render import render_environment

TOOLS = {name: shutil.which(name) for name in ("victoria-metrics", "vmalert", "prometheus-alertmanager")}
pytestmark = pytest.mark.skipif(None in TOOLS.values(), reason="needs victoria-metrics (with vmalert) and "
                                "prometheus-alertmanager (scripts/lab-deps.sh)")
SRV = "monitoring/sm01/etc"


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[dict[str, Any]]:
    ports = {k: free_port() for k in ("vm", "vmalert", "am", "smtp", "hook")}
    data = lab_data()
    alerts = data["monitoring"]["alerts"]
    alerts["email"]["smarthost"] = f"127.0.0.1:{ports['smtp']}"
    alerts["page"]["drain_hook_port"] = ports["hook"]
    alerts["group_wait_s"] = 1
    # CONSTRUCTED stand-in scheduler (the real Slurm runs in the lab test, tests/lab/test_job_migration_lab.py):
    # gpu03 runs jobs 4101 and 4102; 4102 was submitted --no-requeue; 4101 runs on gpu04 once requeued
    sched = tmp_path / "sched.py"
    sched.write_text("import sys\nverb, arg = sys.argv[1:3]\n"
                     "if verb == 'jobs':\n    print('4101\\n4102' if arg == 'gpu03' else '')\n"
                     "elif verb == 'requeue' and arg == '4102':\n"
                     "    sys.exit('scontrol: error: Requested operation is presently disabled for job 4102')\n"
                     "elif verb == 'where':\n    print('4101|RUNNING|gpu04')\n")
    alerts["page"]["migrate"] = {verb: [sys.executable, str(sched), verb, arg] for verb, arg in
                                 (("jobs", "{host}"), ("requeue", "{job}"), ("where", "{jobs}"))}
    files = render_environment(index_of(data), "lab")
    (tmp_path / "rules.yml").write_text(files[f"{SRV}/clusterforge/monitoring/rules.yml"])
    (tmp_path / "am.yml").write_text(files[f"{SRV}/prometheus/alertmanager.yml"])
    smtp = SmtpSink("127.0.0.1", ports["smtp"])  # serves from its own thread
    record = tmp_path / "drained.txt"
    journal = tmp_path / "journal.jsonl"
    drain = responder(index_of(data), [sys.executable, "-c",
                                       "import sys; open(sys.argv[1], 'a').write(sys.argv[2] + '\\n')",
                                       str(record), "{host}"], journal=str(journal), emit=lambda line: None)
    drain.alertmanagers = [f"http://127.0.0.1:{ports['am']}"]
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
        wait_http(f"http://127.0.0.1:{ports['vm']}/health", vm)
        am = start([str(TOOLS["prometheus-alertmanager"]), f"--config.file={tmp_path / 'am.yml'}",
                    f"--storage.path={tmp_path / 'am'}", f"--web.listen-address=127.0.0.1:{ports['am']}",
                    "--cluster.listen-address="])
        wait_http(f"http://127.0.0.1:{ports['am']}/-/ready", am)
        yield {"ports": ports, "files": files, "smtp": smtp, "journal": journal, "record": record, "start": start,
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
    journal, smtp = stack["journal"], stack["smtp"]

    def entries() -> list[dict[str, Any]]:
        return [json.loads(line) for line in journal.read_text().splitlines()] if journal.exists() else []

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if any(e["event"] == "migration" for e in entries()) and smtp.mails("IbSymbolErrors") \
                and smtp.mails("JobsMoved"):
            break
        time.sleep(1)
    logs = {p.name: p.read_text(errors="replace")[-3000:] for p in stack["tmp"].glob("*.log")}
    steps = [(e["event"], e["host"], e.get("job"), e.get("exit")) for e in entries() if e["event"] != "report"]
    assert steps == [("drain", "gpu03", None, 0), ("jobs", "gpu03", None, 0), ("requeue", "gpu03", "4101", 0),
                     ("requeue", "gpu03", "4102", 1), ("migration", "gpu03", None, None)], f"{entries()}; {logs}"
    assert stack["record"].read_text() == "gpu03\n"  # the inventory's drain argv ran, for that host only
    moved = entries()[-1]
    assert (moved["moved"], [r["job"] for r in moved["refused"]]) == (["4101"], ["4102"])
    assert "presently disabled" in moved["refused"][0]["said"]
    # the report went through the real Alertmanager as a level 3: e-mailed naming the jobs, listed below
    report = next(m for _, m in smtp.mails("JobsMoved"))
    assert "4101" in report and "4102" in report and "gpu03" in report
    mails = [m for _, m in smtp.mails("IbSymbolErrors")]
    assert mails, f"no e-mail; got {len(smtp.messages)} message(s)"
    assert port["cable"] in mails[0] and "oncall@lab.invalid" in mails[0]
    result = CliRunner().invoke(app, ["alerts", str(LAB), "--url", f"http://127.0.0.1:{ports['am']}",
                                      "--format", "json"])
    assert result.exit_code == 4, result.output
    listed = {(a["alertname"], a["host"]): a for a in json.loads(result.stdout)["alerts"]}
    assert set(listed) == {("HbmTemperatureHigh", "gpu03"), ("IbSymbolErrors", "gpu05"), ("JobsMoved", "gpu03")}
    jobs = listed[("JobsMoved", "gpu03")]
    assert (jobs["level"], jobs["jobs_moved"], jobs["jobs_refused"]) == (3, ["4101"], ["4102"])
    assert jobs["jobs_now"] == {"4101": "RUNNING on gpu04"} and jobs["cause"] == "HbmTemperatureHigh"
    heat = listed[("HbmTemperatureHigh", "gpu03")]  # the alert itself says what its response did
    assert (heat["jobs_moved"], heat["jobs_refused"], heat["jobs_now"]) == (["4101"], ["4102"],
                                                                           {"4101": "RUNNING on gpu04"})
    text = CliRunner().invoke(app, ["alerts", str(LAB), "--url", f"http://127.0.0.1:{ports['am']}"]).output
    assert "jobs moved: 4101 (now RUNNING on gpu04)" in text
    assert "jobs the scheduler would not requeue, left running: 4102" in text
    sym = listed[("IbSymbolErrors", "gpu05")]
    assert (sym["cable"], sym["rack"], sym["level"]) == (port["cable"], port["rack"], 2)
    assert sym["repair"].startswith(f"clean or reseat the optic at {port['leaf']} port {port['leaf_port']}: "
                                    f"cable {port['cable']}")
