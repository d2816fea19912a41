"""A bad link reaches the operator in minutes, with no backfill (issue #39, item 3), on the container lab: a
systemd lab of inventories/lab deployed with pyinfra (the real node_exporter, vmagent, VictoriaMetrics, vmalert
and Alertmanager, as tests/lab/test_monitoring_e2e.py), then, once the port's live series is stored,
`lab fault errors C-00005 --rate 600`; `clusterforge alerts inventories/lab --format json`, with no `--url`
(the command finds sm01's Alertmanager from the inventory and the running lab), is polled every 10 s: within
5 minutes it lists a level 2 fast tier alert naming the cable, both its ends and its lanes (the lab's cables
ride no trunk: none), while the slow tier, which wants half an hour of rise, is still quiet. The seconds from
the fault to the first listing are printed (docs/monitoring.md's latency table).

inventories/lab itself, on its own lab root (CLUSTERFORGE_LAB_ROOT). Run under `flock /tmp/cf-lab.lock`;
about 5 minutes (marked long)."""

from __future__ import annotations

import json
import shutil
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from cf_lab_monitoring import alerts
from cf_lab_net import cf
from clusterforge.api import load_checked
from clusterforge.model.index import Index
from clusterforge.model.place_text import route_text
from clusterforge.rehearsal import env as labenv

ROOT = Path(__file__).resolve().parents[2]
ENV = ROOT / "inventories" / "lab"
CABLE = "C-00005"  # gpu03 mlx5_0 port 1 <-> leaf-su01-r0/3, an HDR link: the cable
HOST, HCA, PORT = "gpu03", "mlx5_0", 1
RATE_PER_H = 600
DEADLINE_S = 300.0
POLL_S = 10.0
FAST = {"IbSymbolErrorsFast", "IbReceiveErrorsFast"}
pytestmark = [pytest.mark.lab, pytest.mark.long]


def _stored(vm: str, match: str) -> list[dict[str, Any]]:
    url = f"{vm}/api/v1/export?" + urllib.parse.urlencode({"match[]": match})
    with urllib.request.urlopen(url, timeout=30) as r:
        return [json.loads(line) for line in r.read().decode().splitlines() if line.strip()]


def test_a_bad_link_alerts_within_five_minutes_without_backfill(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    for tool in ("podman", "ibsim", "vmalert"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} missing: run scripts/lab-deps.sh (CI does)")
    index = Index(load_checked(ENV).inv)
    cable = index.cables[CABLE]
    ends = (str(cable.a), str(cable.b))
    lanes = route_text(index, cable) or None
    monkeypatch.setenv("CLUSTERFORGE_LAB_ROOT", str(tmp_path / "state"))
    try:
        code, out = cf("lab", "up", str(ENV), "--systemd")
        assert code == 0, f"lab up: {out[-3000:]}"
        code, out = cf("deploy", str(ENV), "--no-diffs")
        assert code == 0, f"deploy: {out[-3000:]}"
        state = labenv.running(ENV)
        assert state is not None, "no lab state after lab up"
        vm = f"http://{state.hosts['sm01'].address}:8428"

        # monitoring runs: the port's live series is stored, labelled with its cable and link rate
        match = f'node_infiniband_symbol_error_total{{host="{HOST}",device="{HCA}",port="{PORT}"}}'
        deadline, series = time.monotonic() + 180, []
        while time.monotonic() < deadline:
            series = _stored(vm, match)
            if series and len(series[0]["values"]) >= 2:
                break
            time.sleep(2)
        assert series and len(series[0]["values"]) >= 2, f"no live series {match} in VictoriaMetrics: {series}"
        labels = series[0]["metric"]
        assert (labels.get("cable"), labels.get("speed")) == (CABLE, "HDR"), labels
        assert not [a for a in alerts(ENV) if a["cable"] == CABLE], "an alert on the cable before the fault"

        t_fault = time.monotonic()
        code, out = cf("lab", "fault", str(ENV), "errors", CABLE, "--rate", str(RATE_PER_H))
        assert code == 0 and f"fault errors {CABLE}" in out, f"lab fault errors: {out}"
        found: list[dict[str, Any]] = []
        listed: list[dict[str, Any]] = []
        while time.monotonic() - t_fault < DEADLINE_S:
            listed = alerts(ENV)
            found = [a for a in listed if a["cable"] == CABLE and a["alertname"] in FAST]
            if found:
                break
            time.sleep(POLL_S)
        seconds = time.monotonic() - t_fault
        seen = [(a["alertname"], a["host"], a["cable"], a["level"]) for a in listed]
        assert found, f"no fast tier alert naming {CABLE} within {DEADLINE_S:.0f} s of the fault; listed: {seen}"
        print(f"lab fault errors {CABLE} --rate {RATE_PER_H} -> {found[0]['alertname']} listed by "
              f"clusterforge alerts after {seconds:.0f} s (polled every {POLL_S:.0f} s)")
        for a in found:
            assert (a["level"], a["host"], a["device"], a["port"]) == (2, HOST, HCA, PORT), a
            assert (a["a_end"], a["b_end"], a["lanes"]) == (*ends, lanes), a
            assert CABLE in a["summary"] and "HDR" in a["summary"] and CABLE in a["repair"], a
        # no backfill: the slow tier (half an hour of rise) cannot have fired yet
        assert not [a for a in listed if a["cable"] == CABLE and a["alertname"] == "IbSymbolErrors"], seen
    finally:
        code, out = cf("lab", "down", str(ENV))
        assert code == 0, out
