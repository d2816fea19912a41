"""Monitoring figures: the real VictoriaMetrics (Debian 1.79) on loopback.

* ingest: N nodes x 200 values every 5 s (8 GPUs x 20 DCGM fields + 2 HCA ports x 20 counters per node),
  paced from Python as InfluxDB line protocol (what Telegraf writes), for `seconds`: values/s offered and
  taken (VictoriaMetrics' own `vm_rows_inserted_total`), its CPU (cores) and resident memory;
* rules: each rendered rule expression of the prod inventory run once against that data as vmalert would
  (an instant query), timed per group. The data spans only the run, so the long windows (3 h, 1 d, 7 d)
  hold little: lower bounds for a store that has been up for days.

* lab (`lab()`, run by `make bench` under the lab lock): the end-to-end scenario of
  tests/lab/test_monitoring_e2e.py on the container lab, each step timed and checked: lab up, deploy,
  the first live samples, and from the faulted series being in the store (live + backfilled history)
  to the level 2 e-mail and the level 3 drain.

Every timed run checks that it worked (BenchFailed, no figure, otherwise): every value offered was taken and
every series is in the store; every rule query answered `success`; the lab scenario's own checks.

    .venv/bin/python bench/monitoring_bench.py [--nodes 2048] [--seconds 30] [--lab]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

GPU_FIELDS = ["GPU_TEMP", "MEMORY_TEMP", "POWER_USAGE", "GPU_UTIL", "XID_ERRORS", "PCIE_REPLAY_COUNTER",
              "ECC_SBE_VOL_TOTAL", "ECC_DBE_VOL_TOTAL", "ECC_SBE_AGG_TOTAL", "ECC_DBE_AGG_TOTAL",
              "CORRECTABLE_REMAPPED_ROWS", "UNCORRECTABLE_REMAPPED_ROWS", "ROW_REMAP_FAILURE",
              "NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
              "NVLINK_REPLAY_ERROR_COUNT_TOTAL", "NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "THERMAL_VIOLATION",
              "SM_CLOCK", "MEM_CLOCK"]
PORT_FIELDS = ["symbol_error_total", "link_downed_total", "link_error_recovery_total", "port_errors_received_total",
               "port_receive_remote_physical_errors_total", "local_link_integrity_errors_total",
               "excessive_buffer_overrun_errors_total", "vl15_dropped_total", "port_data_received_bytes_total",
               "port_data_transmitted_bytes_total", "port_packets_received_total", "port_packets_transmitted_total",
               "port_discards_transmitted_total", "port_transmit_wait_total", "port_constraint_errors_received_total",
               "port_constraint_errors_transmitted_total", "state_id", "physical_state_id",
               "rate_bytes_per_second", "info"]


class BenchFailed(RuntimeError):
    """A timed run did not do what it times: no figure is printed for it."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _lines(node: int, tick: int) -> list[str]:
    host = f"gpu{node:04d}"
    rack, u = f"r{node // 8:03d}", 2 + 4 * (node % 8)
    tags = f"host={host},rack={rack},u={u}"
    out = [f"DCGM_FI_DEV,{tags},gpu={g} " + ",".join(f"{f}={(tick + g + i) % 97}" for i, f in enumerate(GPU_FIELDS))
           for g in range(8)]
    out += [f"node_infiniband,{tags},device=mlx5_{p},port=1 " + ",".join(f"{f}={tick * (i + 1)}"
                                                                         for i, f in enumerate(PORT_FIELDS))
            for p in range(2)]
    return out


def _proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _rows_inserted(port: int) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith('vm_rows_inserted_total{type="influx"}'))


def ingest(vm_port: int, pid: int, nodes: int, seconds: int, interval_s: int = 5) -> dict[str, object]:
    url = f"http://127.0.0.1:{vm_port}/write"
    offered = 0
    late = 0
    batches = [list(range(i, min(nodes, i + 128))) for i in range(0, nodes, 128)]
    cpu0, rows0, t0 = _proc_cpu_s(pid), _rows_inserted(vm_port), time.monotonic()
    ticks = max(1, seconds // interval_s)
    for tick in range(ticks):
        start = time.monotonic()
        for batch in batches:  # spread the interval's writes over it, as collectors on many nodes do
            body = "\n".join(line for n in batch for line in _lines(n, tick)).encode()
            urllib.request.urlopen(urllib.request.Request(url, data=body, method="POST"), timeout=60).close()
            offered += len(batch) * 200
        spent = time.monotonic() - start
        if spent > interval_s:
            late += 1
        else:
            time.sleep(interval_s - spent)
    elapsed = time.monotonic() - t0
    time.sleep(2)
    urllib.request.urlopen(f"http://127.0.0.1:{vm_port}/internal/force_flush", timeout=60).close()
    taken = _rows_inserted(vm_port) - rows0
    if taken < offered:
        raise BenchFailed(f"VictoriaMetrics took {taken:.0f} of {offered} values offered")
    answer = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{vm_port}/api/v1/series/count",
                                               timeout=300).read())
    stored = int(answer["data"][0])
    if stored != nodes * 200:
        raise BenchFailed(f"{stored} series in the store, not {nodes} nodes x 200")
    return {"figure": "monitoring ingest", "nodes": nodes, "values_per_node": 200, "interval_s": interval_s,
            "offered_values_per_s": round(offered / elapsed), "taken_values_per_s": round(taken / elapsed),
            "taken_share": round(taken / offered, 3) if offered else None,
            "vm_cpu_cores": round((_proc_cpu_s(pid) - cpu0) / elapsed, 2), "vm_rss_mb": round(_rss_mb(pid)),
            "late_intervals": late, "seconds": round(elapsed, 1)}


def _instant(vm_port: int, expr: str) -> int:
    query = urllib.parse.urlencode({"query": expr})
    answer = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{vm_port}/api/v1/query?{query}", timeout=300).read())
    result = answer["data"]["result"]
    return int(float(result[0]["value"][1])) if result else 0


def rules(vm_port: int) -> list[dict[str, object]]:
    import yaml

    from clusterforge.api import load_checked
    from clusterforge.model.index import Index
    from clusterforge.render import render_environment

    checked = load_checked(ROOT / "inventories" / "prod")
    mon = checked.inv.monitoring
    assert mon is not None
    # the exporters path's names (node_infiniband_*), as the ingested data has them
    inv = checked.inv.model_copy(update={"monitoring": mon.model_copy(update={"collector": "exporters"})})
    files = render_environment(Index(inv), "prod")
    text = next(t for p, t in files.items() if p.endswith("monitoring/rules.yml"))
    out = []
    for group in yaml.safe_load(text)["groups"]:
        total, series = 0.0, 0
        slowest: tuple[float, str] = (0.0, "")
        for rule in group["rules"]:
            query = urllib.parse.urlencode({"query": rule["expr"]})
            t0 = time.perf_counter()
            answer = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{vm_port}/api/v1/query?{query}",
                                                       timeout=300).read())
            spent = time.perf_counter() - t0
            if answer.get("status") != "success":
                raise BenchFailed(f"rule {rule.get('alert') or rule.get('record')}: {answer}")
            total += spent
            series += len(answer["data"]["result"])
            slowest = max(slowest, (spent, rule.get("alert") or rule.get("record")))
        out.append({"figure": "monitoring rule group", "group": group["name"], "rules": len(group["rules"]),
                    "eval_s": round(total, 3), "series_returned": series, "slowest_rule": slowest[1],
                    "slowest_s": round(slowest[0], 3)})
    return out


def run(nodes: int = 2048, seconds: int = 30) -> list[dict[str, object]]:
    binary = shutil.which("victoria-metrics")
    if binary is None:
        return [{"figure": "monitoring", "skipped": "victoria-metrics is not installed (scripts/lab-deps.sh)"}]
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        # -search.latencyOffset=0s: the rule queries see the samples just written (vmalert evaluates 30 s back
        # by default; here the whole run is younger than that)
        proc = subprocess.Popen([binary, f"-storageDataPath={tmp}", f"-httpListenAddr=127.0.0.1:{port}",
                                 "-retentionPeriod=1d", "-search.latencyOffset=0s"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            rows = [ingest(port, proc.pid, nodes, seconds)]
            seen = _instant(port, "count(DCGM_FI_DEV_MEMORY_TEMP)")
            if seen != nodes * 8:  # the rule queries below must see the data, or their times mean nothing
                raise BenchFailed(f"an instant query sees {seen} HBM temperature series, not {nodes} x 8")
            rows += rules(port)
            return rows
        finally:
            proc.terminate()
            proc.wait(timeout=60)


@contextlib.contextmanager
def lab_root(root: str) -> Iterator[None]:
    """CLUSTERFORGE_LAB_ROOT set to `root` while inside, as it was afterwards."""
    old = os.environ.get("CLUSTERFORGE_LAB_ROOT")
    os.environ["CLUSTERFORGE_LAB_ROOT"] = root
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("CLUSTERFORGE_LAB_ROOT", None)
        else:
            os.environ["CLUSTERFORGE_LAB_ROOT"] = old


def lab(env: Path = ROOT / "inventories" / "lab") -> list[dict[str, object]]:
    """The lab scenario (tests/cf_monitoring_e2e.py) once, under the lab lock, on its own lab root; its rows
    are the seconds of each step. A failed check is BenchFailed."""
    import fcntl

    if shutil.which("podman") is None or os.geteuid() != 0:
        return [{"figure": "monitoring lab", "skipped": "needs root and podman (scripts/lab-deps.sh)"}]
    sys.path.insert(0, str(ROOT / "tests"))
    from cf_monitoring_e2e import ScenarioFailed, cf, run_scenario  # type: ignore[import-not-found]

    with open("/tmp/cf-lab.lock", "w") as lock, tempfile.TemporaryDirectory(prefix="cf-monlab-") as tmp:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with lab_root(tmp):
            try:
                result = run_scenario(env)
            except ScenarioFailed as exc:
                raise BenchFailed(f"monitoring lab scenario: {exc}") from None
            finally:
                cf("lab", "down", str(env))
    return [{"figure": "monitoring lab", "step": step, "seconds": round(sec, 1)}
            for step, sec in result.seconds.items()]


def migration_lab(env: Path = ROOT / "inventories" / "lab") -> list[dict[str, object]]:
    """Level 3 moving a job on the lab's real Slurm (tests/cf_job_migration.py) once, under the lab lock, on a copy
    of `env` on its own lab root and network: the seconds from the fault (its 3 h of heat stored) to the requeued
    job running on another node, beside the lab's set-up. A failed check is BenchFailed."""
    import fcntl

    if shutil.which("podman") is None or os.geteuid() != 0:
        return [{"figure": "job migration lab", "skipped": "needs root and podman (scripts/lab-deps.sh)"}]
    sys.path.insert(0, str(ROOT / "tests"))
    from cf_job_migration import UP_ARGS, run_scenario, shape  # type: ignore[import-not-found]
    from cf_monitoring_e2e import cf  # type: ignore[import-not-found]

    with open("/tmp/cf-lab.lock", "w") as lock, tempfile.TemporaryDirectory(prefix="cf-miglab-") as tmp:
        fcntl.flock(lock, fcntl.LOCK_EX)
        copy = Path(tmp) / "cfmig"
        shutil.copytree(env, copy)
        shape(copy)
        with lab_root(str(Path(tmp) / "state")):
            try:
                t = time.monotonic()
                code, out = cf("lab", "up", str(copy), *UP_ARGS)
                if code != 0:
                    raise BenchFailed(f"job migration lab: lab up: {out[-2000:]}")
                seconds = {"lab up (3 systemd containers, Slurm)": time.monotonic() - t}
                work = Path(tmp) / "work"
                work.mkdir()
                seconds |= run_scenario(copy, work)
            except AssertionError as exc:
                raise BenchFailed(f"job migration lab scenario: {exc}") from None
            finally:
                cf("lab", "down", str(copy))
    return [{"figure": "job migration lab", "step": step, "seconds": round(sec, 1)} for step, sec in seconds.items()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=2048)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--lab", action="store_true", help="also the end-to-end scenario on the container lab")
    args = ap.parse_args()
    rows = run(args.nodes, args.seconds) + (lab() if args.lab else [])
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
