"""The deploy on real lab containers: dry run, first run, idempotency, failures, parity, black hole."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from lab_deploy_support import ENV, NODES, DeployLab

from cf_os_families import declare_os
from clusterforge.api import load_checked
from clusterforge.day2 import change_plan
from clusterforge.deploy.ansible_api import deploy_ansible
from clusterforge.deploy.api import DeployOutcome, DeployRequest, deploy, plans_for
from clusterforge.deploy.record import read_record
from clusterforge.deploy.report import change_keys
from clusterforge.lab import ssh_command
from clusterforge.lab.proc import run
from clusterforge.rehearsal.stage import LabStage

pytestmark = pytest.mark.lab


def _deploy(lab: DeployLab, **kw: object) -> DeployOutcome:
    return deploy(ENV, DeployRequest(stage=LabStage(lab.state_dir), **kw))  # type: ignore[arg-type]


def _status(out: DeployOutcome) -> dict[str, str]:
    return {r.name: r.status for r in out.results}


def _notes(out: DeployOutcome, host: str) -> list[str]:
    return next(r.notes for r in out.results if r.name == host)


def _snapshot(lab: DeployLab) -> dict[str, dict[str, str]]:
    """sha256 of every file the deploy manages, per host, read over SSH."""
    index = load_checked(ENV).index
    plans = plans_for(ENV, DeployRequest(), None, index)
    out: dict[str, dict[str, str]] = {}
    for host in NODES:
        paths = [f.dest for f in plans[host].files if not f.secret]
        res = run(ssh_command(lab.state, host, ["sha256sum", *paths]), timeout=30, check=False)
        out[host] = {line.split()[1]: line.split()[0] for line in res.stdout.splitlines()}
        holds = run(ssh_command(lab.state, host, ["apt-mark", "showhold"]), timeout=30, check=False).stdout
        out[host]["holds"] = hashlib.sha256(holds.encode()).hexdigest()
    return out


def test_dry_run_predicts_the_first_deploy_then_nothing_changes(deploy_lab: DeployLab) -> None:
    dry = _deploy(deploy_lab, dry_run=True)
    assert dry.exit_code == 0 and set(_status(dry).values()) == {"planned"}
    first = _deploy(deploy_lab)
    assert first.exit_code == 0, [r.error for r in first.results]
    assert set(_status(first).values()) == {"changed"}
    assert change_keys(dry.results) == change_keys(first.results)
    second = _deploy(deploy_lab)
    assert second.exit_code == 0
    assert sum(len(r.changes) for r in second.results) == 0
    assert set(_status(second).values()) == {"ok"}
    holds = run(ssh_command(deploy_lab.state, "gpu01", ["apt-mark", "showhold"]), timeout=30).stdout.split()
    assert {"nvidia-driver-550", "libnccl2", "doca-ofed", "lustre-client-utils"} <= set(holds)


def test_the_run_is_on_record_and_changed_then_selects_nothing(deploy_lab: DeployLab) -> None:
    # after the converged deploy above: every host's components on record, in the lab's own state
    record = read_record(deploy_lab.state_dir)
    assert set(record) == set(NODES)
    assert all(r["target"].startswith("lab:") and "nccl" in r["components"]
               for name, r in record.items() if name.startswith("gpu"))
    again = _deploy(deploy_lab, changed_only=True)
    assert again.exit_code == 0 and again.results == []


def test_day2_a_new_pin_reaches_only_the_hosts_it_touches(deploy_lab: DeployLab, tmp_path: Path) -> None:
    # the inventory changes (a new NCCL): diff plans it, `--changed` deploys just that, a full deploy of
    # the old inventory converges back
    bumped = tmp_path / "lab"
    shutil.copytree(ENV, bumped)
    services = bumped / "services.yaml"
    services.write_text(services.read_text().replace("nccl: 2.21.5-1", "nccl: 2.22.3-1"))
    plan = change_plan(load_checked(ENV).index, load_checked(bumped).index, str(bumped), "lab")
    assert {h.host for h in plan.hosts} == {f"gpu0{i}" for i in range(1, 9)} and plan.drained == ()
    out = deploy(bumped, DeployRequest(stage=LabStage(deploy_lab.state_dir), changed_only=True))
    assert out.exit_code == 0, [r.error for r in out.results]
    assert sorted(r.name for r in out.results) == ["gpu01", "gpu02"]  # the lab's GPU nodes; not sm01, lus01
    assert {c.component for r in out.results for c in r.changes} == {"repo", "nccl"}
    version = run(ssh_command(deploy_lab.state, "gpu01", ["dpkg-query", "-W", "-f", "${Version}", "libnccl2"]),
                  timeout=30).stdout
    assert version == "2.22.3-1+cuda12.4"
    assert deploy(bumped, DeployRequest(stage=LabStage(deploy_lab.state_dir), changed_only=True)).results == []
    back = _deploy(deploy_lab)  # the committed inventory again: a full deploy converges the two hosts back
    assert back.exit_code == 0 and sorted(r.name for r in back.results if r.changes) == ["gpu01", "gpu02"]
    assert sum(len(r.changes) for r in _deploy(deploy_lab).results) == 0


def test_drift_is_predicted_and_repaired(deploy_lab: DeployLab) -> None:
    run(ssh_command(deploy_lab.state, "gpu02", ["sh", "-c", "echo NCCL_DEBUG=INFO >> /etc/nccl.conf; "
                                                "chmod 0666 /etc/lnet.conf; apt-mark unhold libnccl2"]),
        timeout=30)
    dry = _deploy(deploy_lab, dry_run=True, limit=("gpu02",))
    keys = change_keys(dry.results)
    assert keys == {("gpu02", "nccl", "file", "/etc/nccl.conf"), ("gpu02", "lustre", "file", "/etc/lnet.conf"),
                    ("gpu02", "nccl", "hold", "libnccl2")}
    diff = next(c.diff for c in dry.results[0].changes if c.target == "/etc/nccl.conf")
    assert "-NCCL_DEBUG=INFO" in diff
    fixed = _deploy(deploy_lab, limit=("gpu02",))
    assert change_keys(fixed.results) == keys
    assert sum(len(r.changes) for r in _deploy(deploy_lab, limit=("gpu02",)).results) == 0


@pytest.mark.long  # about 40 s: make test-long (CI runs it)
def test_a_host_that_is_not_the_declared_os_is_refused_by_both_engines(deploy_lab: DeployLab,
                                                                       tmp_path: Path) -> None:
    # gpu02 declared Rocky 9 (it is the lab's Debian 12) and drifted: neither engine touches it, gpu01 goes on
    first = _deploy(deploy_lab, limit=("gpu01", "gpu02"))  # converged first: alone (test-long) it runs on a fresh lab
    assert first.exit_code == 0, first.results
    wrong = tmp_path / "lab"
    shutil.copytree(ENV, wrong)
    declare_os(wrong, {"gpu02": "rocky9"})
    run(ssh_command(deploy_lab.state, "gpu02", ["sh", "-c", "echo NCCL_DEBUG=WARN >> /etc/nccl.conf"]), timeout=30)
    expected = ("os: the inventory declares rocky9 (Rocky Linux 9: ID=rocky VERSION_ID=9), /etc/os-release says "
                "ID=debian VERSION_ID=12 (Debian GNU/Linux 12 (bookworm)): nothing on this host was changed")
    request = DeployRequest(stage=LabStage(deploy_lab.state_dir), limit=("gpu01", "gpu02"))
    for engine in (deploy, deploy_ansible):
        out = engine(wrong, request)
        status = _status(out)
        assert status["gpu01"] == "ok" and status["gpu02"] == "failed", (engine, out.results)
        error = next(r.error for r in out.results if r.name == "gpu02")
        assert expected in error, (engine, error)
        assert out.exit_code != 0
        conf = run(ssh_command(deploy_lab.state, "gpu02", ["cat", "/etc/nccl.conf"]), timeout=30).stdout
        assert "NCCL_DEBUG=WARN" in conf  # the drift is still there: nothing on gpu02 changed
    fixed = _deploy(deploy_lab, limit=("gpu02",))  # declared as it is: the deploy repairs the drift
    assert fixed.exit_code == 0 and _status(fixed) == {"gpu02": "changed"}


@pytest.mark.long  # about 40 s: make test-long (CI runs it)
def test_a_container_stopped_mid_run_does_not_stop_the_others(deploy_lab: DeployLab) -> None:
    deploy_lab.reset()
    victim = deploy_lab.container("gpu02")

    def stop_soon() -> None:
        time.sleep(2.5)
        subprocess.run(["podman", "kill", victim], capture_output=True, timeout=60, check=False)

    killer = threading.Thread(target=stop_soon)
    killer.start()
    out = _deploy(deploy_lab)
    killer.join()
    status = _status(out)
    assert status["gpu02"] in ("unreachable", "failed"), out.results
    assert all(status[h] == "changed" for h in NODES if h != "gpu02"), out.results
    assert out.exit_code != 0
    bad = next(r for r in out.results if r.name == "gpu02")
    assert bad.error
    # `podman start` of a killed lab container leaves it unreachable on the lab network (reported to
    # the lab's owner), so bring the lab back fresh: the re-run must converge every host again
    deploy_lab.reset()
    again = _deploy(deploy_lab)
    assert again.exit_code == 0 and set(_status(again).values()) == {"changed"}
    assert sum(len(r.changes) for r in _deploy(deploy_lab).results) == 0


def test_black_holed_host_fails_alone(deploy_lab: DeployLab) -> None:
    victim = deploy_lab.container("lus01")
    subprocess.run(["podman", "pause", victim], capture_output=True, timeout=60, check=True)
    try:
        start = time.monotonic()
        out = _deploy(deploy_lab)
        took = time.monotonic() - start
    finally:
        subprocess.run(["podman", "unpause", victim], capture_output=True, timeout=60, check=False)
    status = _status(out)
    assert status["lus01"] == "unreachable" and out.exit_code != 0
    assert all(status[h] == "ok" for h in NODES if h != "lus01")
    assert took < 60


@pytest.mark.long
def test_engines_write_identical_bytes(deploy_lab: DeployLab) -> None:
    deploy_lab.reset()
    py = _deploy(deploy_lab)
    assert py.exit_code == 0, [r.error for r in py.results]
    ours = _snapshot(deploy_lab)
    deploy_lab.reset()
    # check mode on fresh containers is honest: no failure hidden, every host reports what it would change
    dry = deploy_ansible(ENV, DeployRequest(stage=LabStage(deploy_lab.state_dir), dry_run=True))
    assert dry.exit_code == 0, [(r.name, r.error) for r in dry.results]
    assert set(_status(dry).values()) == {"changed"}
    assert {"changed: nccl: Write configuration files",
            "changed: nccl: Report what check mode would install"} <= set(_notes(dry, "gpu01"))
    ans = deploy_ansible(ENV, DeployRequest(stage=LabStage(deploy_lab.state_dir)))
    assert ans.exit_code == 0, [(r.name, r.error) for r in ans.results]
    assert set(_status(ans).values()) == {"changed"}
    # a second Ansible run changes nothing (changed=0 in the callback's stats)
    again = deploy_ansible(ENV, DeployRequest(stage=LabStage(deploy_lab.state_dir)))
    assert again.exit_code == 0, [(r.name, r.error) for r in again.results]
    assert _status(again) == dict.fromkeys(NODES, "ok"), [(r.name, r.notes) for r in again.results]
    assert all("ansible: changed=0 " in " ".join(r.notes) for r in again.results)
    record = read_record(deploy_lab.state_dir)  # Ansible's runs are on record too, for the new containers
    assert {name: r["engine"] for name, r in record.items()} == dict.fromkeys(NODES, "ansible")
    theirs = _snapshot(deploy_lab)
    assert theirs == ours
    # and pyinfra finds nothing left to do after Ansible
    assert sum(len(r.changes) for r in _deploy(deploy_lab).results) == 0
