"""No false page after a fresh deploy, and a real one when the fabric loses its subnet manager (issue #39, item 2),
on the container lab exactly as `make deploy` builds it: `lab up --systemd --no-start-sm --replace`, then
`deploy` (pyinfra; OpenSM started by its component), the real node_exporter, vmagent, VictoriaMetrics, vmalert
and Alertmanager.

1. For 10 minutes from the end of the deploy, `clusterforge alerts inventories/lab --format json` (no `--url`),
   polled every 20 s, lists no level 2 or level 3 alert: NoMasterSubnetManager used to page for the minute
   before ib-health's first sample was scraped.
2. OpenSM stopped on sm01 (the lab's only SM node): NoMasterSubnetManager, level 3, is listed within
   SM_PAGE_S (docs/monitoring.md: ib-health's minute, the rule's 2 minutes of no master, vmalert's minute).
3. OpenSM started again: the alert is gone within SM_CLEAR_S.

The seconds of each are printed (docs/monitoring.md's latency table). inventories/lab itself, on its own lab
root (CLUSTERFORGE_LAB_ROOT). Run under `flock /tmp/cf-lab.lock`; about 20 minutes (marked long)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from cf_lab_monitoring import alerts, wait_alertmanager
from cf_lab_net import cf
from clusterforge.lab import ssh_command
from clusterforge.lab.proc import run
from clusterforge.rehearsal import env as labenv

ROOT = Path(__file__).resolve().parents[2]
ENV = ROOT / "inventories" / "lab"
QUIET_S = 600.0
POLL_S = 20.0
SM_PAGE_S = 420.0
"""ib-health's next run (at most 60 s) writes no master; the rule wants 2 min of such samples; vmalert's minute and
the 30 s latency offset; the 20 s poll: about 290 s at worst, and room for a loaded machine (240 s measured)."""
SM_CLEAR_S = 240.0
SM_NODE = "sm01"
pytestmark = [pytest.mark.lab, pytest.mark.long]


def _seen(alerts: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(a["alertname"], a["level"], a["host"], a["cable"]) for a in alerts]


def _until(check: Any, limit_s: float) -> tuple[float, list[dict[str, Any]]]:
    """Poll `alerts` until check(listed) holds; (seconds taken, or -1 when it never did; the last listing)."""
    start = time.monotonic()
    listed: list[dict[str, Any]] = []
    while time.monotonic() - start < limit_s:
        listed = alerts(ENV)
        if check(listed):
            return time.monotonic() - start, listed
        time.sleep(POLL_S)
    return -1.0, listed


def _no_master(listed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [a for a in listed if a["alertname"] == "NoMasterSubnetManager"]


def test_a_fresh_deploy_pages_nobody_and_a_lost_sm_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for tool in ("podman", "ibsim", "vmalert"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} missing: run scripts/lab-deps.sh (CI does)")
    monkeypatch.setenv("CLUSTERFORGE_LAB_ROOT", str(tmp_path / "state"))
    try:
        code, out = cf("lab", "up", str(ENV), "--systemd", "--no-start-sm", "--replace")
        assert code == 0, f"lab up: {out[-3000:]}"
        code, out = cf("deploy", str(ENV), "--no-diffs")
        assert code == 0, f"deploy: {out[-3000:]}"
        state = labenv.running(ENV)
        assert state is not None, "no lab state after lab up"

        # 1. ten quiet minutes: nothing at level 2 or 3 (level 1 is information, e.g. an application XID), from
        # when Alertmanager first answers (the deploy has just started it: unreachable for a few seconds)
        print(f"Alertmanager answers {wait_alertmanager(ENV):.0f} s after the deploy")
        start = time.monotonic()
        loud: list[dict[str, Any]] = []
        while time.monotonic() - start < QUIET_S and not loud:
            loud = [a for a in alerts(ENV) if (a["level"] or 0) >= 2]
            if not loud:
                time.sleep(POLL_S)
        assert not loud, f"a fresh deploy raised {_seen(loud)} after {time.monotonic() - start:.0f} s"
        print(f"fresh deploy: no level 2/3 alert in {QUIET_S:.0f} s (polled every {POLL_S:.0f} s)")

        # 2. the subnet manager stops: a page
        stop = run(ssh_command(state, SM_NODE, ["systemctl", "stop", "opensm"]), timeout=60, check=False)
        assert stop.returncode == 0, stop.stderr
        took, listed = _until(lambda x: bool(_no_master(x)), SM_PAGE_S)
        assert took >= 0, f"no NoMasterSubnetManager within {SM_PAGE_S:.0f} s of stopping OpenSM: {_seen(listed)}"
        assert {a["level"] for a in _no_master(listed)} == {3}, _seen(listed)
        print(f"OpenSM stopped on {SM_NODE} -> NoMasterSubnetManager listed after {took:.0f} s")

        # 3. it starts again: the page clears
        start_sm = run(ssh_command(state, SM_NODE, ["systemctl", "start", "opensm"]), timeout=60, check=False)
        assert start_sm.returncode == 0, start_sm.stderr
        took, listed = _until(lambda x: not _no_master(x), SM_CLEAR_S)
        assert took >= 0, f"NoMasterSubnetManager still listed {SM_CLEAR_S:.0f} s after OpenSM started"
        print(f"OpenSM started on {SM_NODE} -> NoMasterSubnetManager cleared after {took:.0f} s")
    finally:
        code, out = cf("lab", "down", str(ENV))
        assert code == 0, out
