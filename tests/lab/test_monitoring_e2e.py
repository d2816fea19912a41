"""Monitoring end to end on the container lab (issue #11): faults on the lab's stand-ins -> the real
node_exporter, vmagent, VictoriaMetrics, vmalert and Alertmanager deployed by pyinfra on a systemd lab ->
a level 2 e-mail naming the cable at an SMTP sink on the lab machine, a level 3 drain recorded in the lab,
`clusterforge alerts` listing both placed. The scenario and what each step checks: tests/cf_monitoring_e2e.py.

inventories/lab itself (its smarthost is the lab network's gateway), on its own lab root. Run under
`flock /tmp/cf-lab.lock`; about 2 minutes here (marked long: `make test-long`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cf_monitoring_e2e import cf, run_scenario

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.lab, pytest.mark.long]


def test_faults_reach_mail_drain_and_alerts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for tool in ("podman", "ibsim", "vmalert"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} missing: run scripts/lab-deps.sh (CI does)")
    env = ROOT / "inventories" / "lab"
    monkeypatch.setenv("CLUSTERFORGE_LAB_ROOT", str(tmp_path / "state"))
    try:
        result = run_scenario(env)
    finally:
        code, out = cf("lab", "down", str(env))
        assert code == 0, out
    print({k: round(v, 1) for k, v in result.seconds.items()})
    assert result.seconds["history stored -> level 2 e-mail"] < 300
