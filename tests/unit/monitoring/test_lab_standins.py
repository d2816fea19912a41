"""The lab's monitoring stand-ins: the files `lab up` writes for each container (the sysfs tree the real
node_exporter reads, the DCGM exposition), and the dcgm-exporter stand-in package's program serving that
file over HTTP as /metrics, run for real."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from cf_http import free_port
from clusterforge.deploy.packages import DCGM_EXPORTER_PACKAGE
from clusterforge.lab.monitoring_standins import (
    DCGM_FILE,
    LAB_DIR,
    SYSFS_ROOT,
    MonitoredHost,
    dcgm_file,
    host_dir,
    sysfs_root,
    write_initial,
)
from clusterforge.rehearsal.standin import extra_files
from clusterforge.sim import ib_sysfs
from clusterforge.sim.nvidia_smi import _uuid


def test_paths_m2_builds_on() -> None:
    assert LAB_DIR == "/var/lib/cf-lab"
    assert SYSFS_ROOT == "/var/lib/cf-lab/sysfs"
    assert DCGM_FILE == "/var/lib/cf-lab/dcgm/metrics.prom"
    state = Path("/x/state")
    assert host_dir(state, "gpu01") == Path("/x/state/hosts/gpu01/cf-lab")
    assert sysfs_root(state, "gpu01") == Path("/x/state/hosts/gpu01/cf-lab/sysfs")
    assert dcgm_file(state, "gpu01") == Path("/x/state/hosts/gpu01/cf-lab/dcgm/metrics.prom")


def test_write_initial_ports_and_gpus(tmp_path: Path) -> None:
    hosts = [MonitoredHost("gpu01", (("mlx5_0", 1, "NDR"), ("mlx5_1", 1, "HDR")), "H100-SXM", 2),
             MonitoredHost("mgmt01")]
    write_initial(tmp_path, hosts)
    port = sysfs_root(tmp_path, "gpu01") / "class/infiniband/mlx5_0/ports/1"
    assert (port / "rate").read_text() == ib_sysfs.RATES["NDR"] + "\n"
    assert (port / "phys_state").read_text() == "5: LinkUp\n"
    assert (port / "counters/symbol_error").read_text() == "0\n"
    assert (sysfs_root(tmp_path, "gpu01") / "class/infiniband/mlx5_1/ports/1/rate").read_text().startswith("200")
    text = dcgm_file(tmp_path, "gpu01").read_text()
    assert f'UUID="{_uuid("gpu01", 1)}"' in text and 'gpu="1"' in text and "DCGM_FI_DEV_MEMORY_TEMP{" in text
    # a host without HCAs or GPUs still gets its (empty) mount source, and no DCGM file
    assert (sysfs_root(tmp_path, "mgmt01") / "class/infiniband").is_dir()
    assert not dcgm_file(tmp_path, "mgmt01").exists()
    assert oct(host_dir(tmp_path, "gpu01").stat().st_mode & 0o777) == "0o755"


def test_write_initial_keeps_a_running_labs_faults(tmp_path: Path) -> None:
    host = MonitoredHost("gpu01", (("mlx5_0", 1, "NDR"),), "H100-SXM", 1)
    write_initial(tmp_path, [host])
    root = sysfs_root(tmp_path, "gpu01")
    ib_sysfs.write_tree(root, [ib_sysfs.SysfsPort("mlx5_0", 1, "NDR", counters={"symbol_error": 99})])
    dcgm_file(tmp_path, "gpu01").write_text("faulted\n")
    write_initial(tmp_path, [host])
    assert (root / "class/infiniband/mlx5_0/ports/1/counters/symbol_error").read_text() == "99\n"
    assert dcgm_file(tmp_path, "gpu01").read_text() == "faulted\n"


def test_dcgm_exporter_standin_serves_the_file(tmp_path: Path) -> None:
    """The stand-in package's /usr/bin/dcgm-exporter, started with the rendered unit's arguments."""
    script = tmp_path / "dcgm-exporter"
    script.write_text(extra_files(DCGM_EXPORTER_PACKAGE, "3.3.9-1")["usr/bin/dcgm-exporter"][0])
    metrics = tmp_path / "metrics.prom"
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(script), "-f", "/etc/dcgm-exporter/clusterforge-counters.csv",
                             "-c", "5000", "-a", f"127.0.0.1:{port}"],
                            env={**os.environ, "CF_LAB_DCGM_FILE": str(metrics)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(url, timeout=2)
            except urllib.error.HTTPError as exc:
                assert exc.code == 503  # listening, the file not written yet
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        metrics.write_text('DCGM_FI_DEV_MEMORY_TEMP{gpu="0"} 91\n')
        with urllib.request.urlopen(url, timeout=5) as r:
            assert r.read() == b'DCGM_FI_DEV_MEMORY_TEMP{gpu="0"} 91\n'
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/other", timeout=5)
        assert missing.value.code == 404
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_ofed_standin_points_node_exporter_at_the_tree() -> None:
    files = extra_files("doca-ofed", "24.04-0.7.0.0")
    dropin = files["lib/systemd/system/prometheus-node-exporter.service.d/cf-lab-sysfs.conf"][0]
    lines = dropin.splitlines()
    assert lines[lines.index("[Service]") + 1] == "ExecStart="
    assert f"ExecStart=/usr/bin/prometheus-node-exporter $ARGS --path.sysfs={SYSFS_ROOT}" in lines


def test_telegraf_is_a_pinned_standin_in_a_prod_rehearsal() -> None:
    """Telegraf is not installable here: the lab repository holds an idle LAB-ONLY stand-in of the pin."""
    from clusterforge.api import load_checked
    from clusterforge.deploy.packages import all_pins

    sw = load_checked(Path(__file__).resolve().parents[3] / "inventories" / "prod").index.inv.software
    pins = {p.package: p.version for p in all_pins(sw)}
    assert pins["telegraf"] == "1.30.3-1" and pins[DCGM_EXPORTER_PACKAGE] == "3.3.9-1"
    unit = extra_files("telegraf", "1.30.3-1")["lib/systemd/system/telegraf.service"][0]
    assert "LAB-ONLY" in unit and "ExecStart=/bin/sleep infinity" in unit
