"""The metric names the exporters-path rules read are node_exporter's own: the Debian node_exporter,
run on the lab's stand-in sysfs tree, exposes each of them with the counters written there."""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from cf_http import free_port
from clusterforge.render.monitoring_rules import IB
from clusterforge.sim.ib_sysfs import SysfsPort, write_tree

NODE_EXPORTER = shutil.which("prometheus-node-exporter")


def _scrape(sysfs: Path) -> str:
    assert NODE_EXPORTER is not None
    port = free_port()
    proc = subprocess.Popen([NODE_EXPORTER, f"--path.sysfs={sysfs}", f"--web.listen-address=127.0.0.1:{port}",
                             "--collector.disable-defaults", "--collector.infiniband"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    return str(r.read().decode())
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.mark.skipif(NODE_EXPORTER is None, reason="node_exporter is not installed (apt-get install "
                    "prometheus-node-exporter)")
def test_rules_read_node_exporters_infiniband_names(tmp_path: Path) -> None:
    write_tree(tmp_path, [SysfsPort("mlx5_0", 1, counters={"symbol_error": 42, "link_downed": 3,
                                                           "port_rcv_errors": 7}),
                          SysfsPort("mlx5_1", 1, phys_state=3)])
    text = _scrape(tmp_path)
    values = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
              if line.startswith("node_infiniband_")}
    names = IB["exporters"]
    assert values[f'{names["symbol"]}{{device="mlx5_0",port="1"}}'] == 42
    assert values[f'{names["downed"]}{{device="mlx5_0",port="1"}}'] == 3
    assert values[f'{names["rcv"]}{{device="mlx5_0",port="1"}}'] == 7
    assert values[f'{names["phys_state"]}{{device="mlx5_0",port="1"}}'] == 5
    assert values[f'{names["phys_state"]}{{device="mlx5_1",port="1"}}'] == 3


def test_stand_in_tree_updates_counters_in_place(tmp_path: Path) -> None:
    write_tree(tmp_path, [SysfsPort("mlx5_0", 1)])
    counters = tmp_path / "class/infiniband/mlx5_0/ports/1/counters"
    assert (counters / "symbol_error").read_text() == "0\n"
    write_tree(tmp_path, [SysfsPort("mlx5_0", 1, counters={"symbol_error": 9})])
    assert (counters / "symbol_error").read_text() == "9\n"
    assert sorted(p.name for p in counters.iterdir() if p.name.startswith(".")) == []


@pytest.mark.skipif(NODE_EXPORTER is None, reason="node_exporter is not installed")
def test_dcgm_stand_in_served_by_node_exporters_textfile_collector(tmp_path: Path) -> None:
    from clusterforge.render.monitoring_rules import GPU
    from clusterforge.sim.dcgm_textfile import gpus_of, write_textfile

    write_textfile(tmp_path, "gpu01", "NVIDIA A100-SXM4-80GB", gpus_of("gpu01", 8),
                   {3: {"DCGM_FI_DEV_MEMORY_TEMP": 91, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": 1200}})
    assert NODE_EXPORTER is not None
    port = free_port()
    proc = subprocess.Popen([NODE_EXPORTER, f"--collector.textfile.directory={tmp_path}",
                             f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
                             "--collector.textfile"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    text = r.read().decode()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert "node_textfile_scrape_error 0" in text
    hot = [line for line in text.splitlines() if line.startswith(GPU["hbm_temp"] + "{") and 'gpu="3"' in line]
    assert len(hot) == 1 and hot[0].endswith(" 91") and 'Hostname="gpu01"' in hot[0]
    assert sum(line.startswith(GPU["ecc_sbe"] + "{") for line in text.splitlines()) == 8
    for name in (GPU["gpu_temp"], GPU["xid"], GPU["row_remap_failure"]):
        assert f"\n{name}{{" in text, name
