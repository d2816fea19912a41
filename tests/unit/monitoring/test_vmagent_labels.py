"""The labels from the model on real series: node_exporter reads the stand-in sysfs tree, vmagent scrapes it
with the rendered scrape config (only the target address changed to loopback) and writes into VictoriaMetrics;
the stored series carry host, rack, U and the port's rail, leaf, leaf port, cable and both ends."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from cf_http import free_port
from cf_lab_inventory import lab_index
from clusterforge.render import render_environment
from clusterforge.sim.ib_sysfs import SysfsPort, write_tree

TOOLS = {n: shutil.which(n) for n in ("victoria-metrics", "vmagent", "prometheus-node-exporter")}
pytestmark = pytest.mark.skipif(None in TOOLS.values(), reason="needs victoria-metrics (vmagent) and "
                                "prometheus-node-exporter (scripts/lab-deps.sh)")


def _wait(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise
            time.sleep(0.2)


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in reversed(started):
        proc.terminate()
        proc.wait(timeout=30)


def test_series_carry_the_models_labels(tmp_path: Path, procs: list[subprocess.Popen[bytes]]) -> None:
    index = lab_index()
    write_tree(tmp_path / "sys", [SysfsPort("mlx5_0", 1, counters={"symbol_error": 17}), SysfsPort("mlx5_1", 1)])
    ne, vm = free_port(), free_port()

    def start(argv: list[str]) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
        procs.append(proc)
        return proc

    p = start([str(TOOLS["prometheus-node-exporter"]), f"--path.sysfs={tmp_path / 'sys'}",
               f"--web.listen-address=127.0.0.1:{ne}", "--collector.disable-defaults", "--collector.infiniband"])
    _wait(f"http://127.0.0.1:{ne}/metrics", p)
    p = start([str(TOOLS["victoria-metrics"]), f"-storageDataPath={tmp_path / 'vm'}",
               f"-httpListenAddr=127.0.0.1:{vm}", "-search.latencyOffset=0s"])
    _wait(f"http://127.0.0.1:{vm}/health", p)
    conf = yaml.safe_load(render_environment(index, "lab")["monitoring/sm01/etc/clusterforge/monitoring/scrape.yml"])
    job = next(j for j in conf["scrape_configs"] if j["job_name"] == "node/gpu06")
    job["static_configs"][0]["targets"] = [f"127.0.0.1:{ne}"]  # the only change: gpu06 is this loopback
    conf["scrape_configs"] = [job]
    conf["global"]["scrape_interval"] = "1s"
    (tmp_path / "scrape.yml").write_text(yaml.safe_dump(conf))
    start([str(TOOLS["vmagent"]), f"-promscrape.config={tmp_path / 'scrape.yml'}",
           f"-remoteWrite.url=http://127.0.0.1:{vm}/api/v1/write", f"-remoteWrite.tmpDataPath={tmp_path / 'q'}",
           f"-httpListenAddr=127.0.0.1:{free_port()}", "-remoteWrite.flushInterval=1s"])
    query = urllib.parse.urlencode({"query": 'node_infiniband_symbol_error_total{host="gpu06"}'})
    deadline, result = time.monotonic() + 60, []
    while time.monotonic() < deadline and len(result) < 2:
        time.sleep(1)
        answer = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{vm}/api/v1/query?{query}", timeout=10).read())
        result = answer["data"]["result"]
    by_device = {r["metric"]["device"]: r for r in result}
    assert set(by_device) == {"mlx5_0", "mlx5_1"}, result
    cable = index.cable_at[("gpu06", "mlx5_0", 1)]
    got = by_device["mlx5_0"]["metric"]
    assert by_device["mlx5_0"]["value"][1] == "17"
    assert {k: got.get(k) for k in ("host", "rack", "u", "exporter", "rail", "leaf", "leaf_port", "cable", "a_end",
                                    "b_end", "speed")} == {
        "host": "gpu06", "rack": "lab-su02-r01", "u": "6", "exporter": "node", "rail": "0", "leaf": cable.b.device,
        "leaf_port": str(cable.b.port), "cable": cable.id, "a_end": str(cable.a), "b_end": str(cable.b),
        "speed": "HDR"}
    assert by_device["mlx5_1"]["metric"]["cable"] == index.cable_at[("gpu06", "mlx5_1", 1)].id
