"""The fast error tier under the store that runs it in production: VictoriaMetrics' own MetricsQL (promtool's
PromQL extrapolates `rate`; VictoriaMetrics counts from the sample before the window and does not), on
loopback, with the expression rendered for the lab and a port's labels as the rendered scrape config gives
them. Whole-error counters sampled every 5 s (the lab's interval) go in through the import API; the
expression is asked at chosen past times (`time`, `nocache=1`: no result cache, no latency offset): when it
first holds after a fault starts, and that a burst, a counter reset and a slow rise never hold.

What this gives the latency table (docs/monitoring.md): the seconds from the fault's first error to the first
evaluation time at which the fast tier holds. vmalert adds its group interval and the store's 30 s
`-search.latencyOffset` on top (worked out there, not measured here)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cf_http import free_port, wait_http
from cf_lab_inventory import lab_index
from clusterforge.render import render_environment
from clusterforge.render.monitoring_rules import FAST_WINDOWS

VM = shutil.which("victoria-metrics")
pytestmark = pytest.mark.skipif(VM is None, reason="needs victoria-metrics (apt-get install victoria-metrics)")
SRV = "monitoring/sm01/etc/clusterforge/monitoring"
STEP_S = 5
FIRST_WINDOW_S = 60
"""The fast tier's window at the lab's 5 s interval (monitoring_rules.fast_window_s)."""


@pytest.fixture
def vm(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    assert VM is not None
    with (tmp_path / "vm.log").open("wb") as log:
        proc = subprocess.Popen([VM, f"-storageDataPath={tmp_path / 'vm'}", f"-httpListenAddr=127.0.0.1:{port}",
                                 "-retentionPeriod=7d"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/health", proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _rendered() -> tuple[dict[str, str], dict[str, Any]]:
    files = render_environment(lab_index(), "lab")
    return files, yaml.safe_load(files[f"{SRV}/rules.yml"])


def _fast_expr(rules: dict[str, Any], alert: str, speed: str) -> str:
    group = next(g for g in rules["groups"] if g["name"] == "clusterforge-fabric-fast")
    exprs = [r["expr"] for r in group["rules"] if r.get("alert") == alert and f'speed="{speed}"' in r["expr"]]
    assert len(exprs) == 1, group
    expr: str = exprs[0]
    return expr


def _slow_expr(rules: dict[str, Any], alert: str) -> str:
    group = next(g for g in rules["groups"] if g["name"] == "clusterforge-fabric")
    expr: str = next(r["expr"] for r in group["rules"] if r.get("alert") == alert)
    return expr


def _port_labels(files: dict[str, str], host: str, device: str, port: int) -> dict[str, str]:
    """What vmagent attaches to that port's series: the job's target labels and its device;port relabels."""
    conf = yaml.safe_load(files[f"{SRV}/scrape.yml"])
    job = next(j for j in conf["scrape_configs"] if j["job_name"] == f"node/{host}")
    out = {**job["static_configs"][0]["labels"], "device": device, "port": str(port)}
    for r in job["metric_relabel_configs"]:
        if r["regex"] == f"{device};{port}":
            out[r["target_label"]] = r["replacement"]
    return out


def _import(vm: str, name: str, labels: dict[str, str], stamps: list[int], values: list[int]) -> None:
    body = json.dumps({"metric": {"__name__": name, **labels}, "values": values,
                       "timestamps": [s * 1000 for s in stamps]}) + "\n"
    urllib.request.urlopen(urllib.request.Request(f"{vm}/api/v1/import", data=body.encode(), method="POST"),
                           timeout=30).close()


def _holds(vm: str, expr: str, at: int) -> dict[str, float]:
    """cable -> value of every series the expression returns at unix time `at`."""
    query = urllib.parse.urlencode({"query": expr, "time": str(at), "nocache": "1"})
    with urllib.request.urlopen(f"{vm}/api/v1/query?{query}", timeout=30) as r:
        answer = json.loads(r.read())
    assert answer["status"] == "success", answer
    return {x["metric"].get("cable", "?"): float(x["value"][1]) for x in answer["data"]["result"]}


def test_fast_tier_in_victoriametrics_fires_two_minutes_after_the_fault_and_ignores_bursts(vm: str) -> None:
    files, rules = _rendered()
    expr = _fast_expr(rules, "IbSymbolErrorsFast", "HDR")
    base = _port_labels(files, "gpu03", "mlx5_0", 1)  # cable C-00005 (the issue's), an HDR link in the lab
    assert (base["cable"], base["speed"]) == ("C-00005", "HDR"), base

    def port(cable: str) -> dict[str, str]:
        return {**base, "cable": cable}

    now = int(time.time()) // STEP_S * STEP_S
    start = now - 40 * 60
    fault = now - 20 * 60  # 20 min of a quiet port, then the fault
    stamps = list(range(start, now - 60, STEP_S))

    def counter(per_h: float, base_value: int = 0) -> list[int]:
        return [base_value + int(max(0, t - fault) * per_h / 3600) for t in stamps]

    series = {
        "C-00005": counter(600),                                                     # `lab fault errors --rate 600`
        "C-90001": [500 if t >= fault else 0 for t in stamps],                      # a one-off burst
        "C-90002": [0 if t >= fault else 1_000_000 for t in stamps],                # a reboot's counter reset
        "C-90003": [(7 if t >= fault + STEP_S else 0) if t >= fault else 1_000_000 for t in stamps],  # + training
        "C-90004": counter(20),                                                      # slow decay: the slow tier's
        "C-90005": counter(130),                                                     # just under HDR's 144
        # a burst of 500 spread over 25 s (five scrapes): whatever instant the windows' boundaries fall on, it
        # covers no whole window, so it never lies in all three (with two windows it straddled their boundary)
        "C-90006": [min(500, max(0, (t - fault) * 20)) for t in stamps],
    }
    for cable, values in series.items():
        _import(vm, "node_infiniband_symbol_error_total", port(cable), stamps, values)
    urllib.request.urlopen(f"{vm}/internal/force_flush", timeout=30).close()

    seen: dict[int, dict[str, float]] = {}
    for dt in range(-60, 15 * 60 + 1, STEP_S):
        seen[dt] = _holds(vm, expr, fault + dt)
    fired = sorted(dt for dt, got in seen.items() if "C-00005" in got)
    assert fired, f"the fast tier never held for 600 an hour: {expr}"
    first = fired[0]
    print(f"fast tier first holds {first} s after the fault: {seen[first]}")
    # every window must hold the rise: more than FAST_WINDOWS - 1 windows after the fault, and with the lab's rate
    # (an error every 6 s) a few errors into the oldest window
    assert (FAST_WINDOWS - 1) * FIRST_WINDOW_S < first <= (FAST_WINDOWS - 1) * FIRST_WINDOW_S + 30, (first, expr)
    assert fired == list(range(first, 15 * 60 + 1, STEP_S)), "it must hold from then on while the fault holds"
    assert all(500 <= seen[dt]["C-00005"] <= 700 for dt in fired[1 + FIRST_WINDOW_S // STEP_S:]), seen[fired[-1]]
    others = {c: dts for c in series if c != "C-00005"
              for dts in [[dt for dt, got in seen.items() if c in got]] if dts}
    assert others == {}, f"held where it must stay quiet: {others}"


def test_slow_tier_in_victoriametrics_needs_half_an_hour_of_rise(vm: str) -> None:
    """The same 600 an hour through the slow tier (IbSymbolErrors: every 10-minute window of the last 30 min
    rising): without backfill it first holds about half an hour after the fault, which is why the fast tier
    exists. Its first time is the slow row of the latency table."""
    files, rules = _rendered()
    expr = _slow_expr(rules, "IbSymbolErrors")
    labels = _port_labels(files, "gpu03", "mlx5_0", 1)
    now = int(time.time()) // STEP_S * STEP_S
    fault = now - 45 * 60
    stamps = list(range(fault - 30 * 60, now - 60, STEP_S))
    _import(vm, "node_infiniband_symbol_error_total", labels, stamps,
            [int(max(0, t - fault) * 600 / 3600) for t in stamps])
    urllib.request.urlopen(f"{vm}/internal/force_flush", timeout=30).close()
    fired = [dt for dt in range(15 * 60, 43 * 60 + 1, 15) if "C-00005" in _holds(vm, expr, fault + dt)]
    assert fired, f"the slow tier never held for 600 an hour within 43 min: {expr}"
    print(f"slow tier first holds {fired[0]} s after the fault")
    # the subquery's steps (multiples of 5 min) in the last 30 min: the oldest must follow the first error, so
    # between 25 and 30 minutes after it, as the fault falls on that 5-minute grid (this query's 15 s steps)
    assert 25 * 60 < fired[0] <= 30 * 60 + 15, fired[0]


def test_slow_tier_in_victoriametrics_waits_for_a_young_series_to_be_half_an_hour_old(vm: str) -> None:
    """The lab's case: monitoring deployed minutes before the fault, so the port's series is younger than the
    slow tier's half hour. The subquery has steps only where the series has samples, and every one of them rises;
    the slow tier must still stay quiet until the series is half an hour old (CI of 2026-12-07 saw it fire 3 min
    into the fault, beside the fast tier)."""
    files, rules = _rendered()
    expr = _slow_expr(rules, "IbSymbolErrors")
    labels = _port_labels(files, "gpu03", "mlx5_0", 1)
    now = int(time.time()) // STEP_S * STEP_S
    # the port's first scrape just after a step of the subquery's 5-minute grid, the fault 10 s later (the lab
    # faults once two samples are stored): the first step after the series starts already sees the rise
    first = (now - 50 * 60) // 300 * 300 + STEP_S
    fault = first + 10
    stamps = list(range(first, now - 60, STEP_S))
    _import(vm, "node_infiniband_symbol_error_total", labels, stamps,
            [int(max(0, t - fault) * 600 / 3600) for t in stamps])
    urllib.request.urlopen(f"{vm}/internal/force_flush", timeout=30).close()
    held = [dt for dt in range(0, 46 * 60 + 1, 15) if "C-00005" in _holds(vm, expr, first + dt)]
    assert held, f"the slow tier never held for 600 an hour within 46 min of the first scrape: {expr}"
    print(f"slow tier first holds {held[0]} s after the series' first sample (the fault 10 s after it)")
    assert held[0] >= 30 * 60, f"held {held[0]} s after the first sample: a series younger than half an hour"
