"""The deploy per OS family on real lab containers: gpu01 Debian 12, gpu07 Ubuntu-22.04-shaped, gpu08 Rocky-9-shaped
(LAB-ONLY Debian roots whose os-release says so; the EL one with the real rpm, dnf and versionlock plugin, its
packages the stand-in RPMs from the lab's dnf repository, the driver in a real module stream).

It is inventories/lab-os (what `make deploy ENV=lab-os` brings up) on its own network. The whole lab is up (the
driver pin is every GPU node's); the three are looked at. Both engines, the same bytes and the same package state;
each pin at its pin (dpkg-query, rpm -q), held (apt-mark) or locked (dnf versionlock); a second run changes nothing;
a driver bump is planned by `diff`, applied by `apply`, and the EL node's versionlock moves with it. The runs name
the components they deploy.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cf_lab_net import cf, lab_copy, own_network
from clusterforge.api import load_checked
from clusterforge.deploy.ansible_api import deploy_ansible
from clusterforge.deploy.api import DeployOutcome, DeployRequest, deploy, plans_for
from clusterforge.lab import read_state, ssh_command
from clusterforge.lab.proc import run
from clusterforge.rehearsal.env import paths
from clusterforge.rehearsal.stage import LabStage

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.lab, pytest.mark.long]
NODES = ("gpu01", "gpu07", "gpu08")
SHAPES = {"gpu07": "ubuntu2204", "gpu08": "rocky9"}  # as inventories/lab-os declares them
COMPONENTS = ("repo", "base", "ofed", "nvidia", "nccl", "lustre")
BUMP = "550.127.05"


def _shape(env: Path) -> None:
    own_network(env)
    hardware = load_checked(env).index.hardware
    assert {n: hardware[n].os for n in SHAPES} == SHAPES


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with lab_copy(tmp_path_factory, ROOT / "inventories" / "lab-os", "oslab", edit=_shape) as env:
        mp = pytest.MonkeyPatch()
        mp.chdir(env.parent)  # apply's deploy steps write out/oslab/ here
        try:
            yield env
        finally:
            mp.undo()


def _request(env: Path, **kw: object) -> DeployRequest:
    return DeployRequest(stage=LabStage(paths(env).state_dir), components=COMPONENTS, **kw)  # type: ignore[arg-type]


def _sh(env: Path, host: str, script: str) -> str:
    state = read_state(paths(env).state_dir)
    assert state is not None
    return run(ssh_command(state, host, ["sh", "-c", script]), timeout=60, check=False).stdout


def _state(env: Path) -> dict[str, dict[str, str]]:
    """Per host: sha256 of every managed file, and the package manager's own view of every pin (version and
    hold or lock), read over SSH."""
    index = load_checked(env).index
    plans = plans_for(env, DeployRequest(components=COMPONENTS), None, index)
    out: dict[str, dict[str, str]] = {}
    for host in NODES:
        plan = plans[host]
        files = [f.dest for f in plan.files if not f.secret]
        sums = _sh(env, host, "sha256sum " + " ".join(files) + " 2>/dev/null")
        entry = {line.split()[1]: line.split()[0] for line in sums.splitlines()}
        names = " ".join(sorted({p.package for p in plan.pins}))
        if plan.package_manager == "dnf":
            entry["versions"] = _sh(env, host, f"rpm -q --qf '%{{NAME}}=%{{VERSION}}-%{{RELEASE}}\\n' {names}")
            entry["held"] = _sh(env, host, "dnf -q versionlock list 2>/dev/null | sort")
        else:
            entry["versions"] = _sh(env, host, f"dpkg-query -W -f '${{Package}}=${{Version}}\\n' {names}")
            entry["held"] = _sh(env, host, "apt-mark showhold | sort")
        out[host] = entry
    return out


def _pins(env: Path, host: str) -> dict[str, str]:
    plans = plans_for(env, DeployRequest(components=COMPONENTS), None, load_checked(env).index)
    return {p.package: p.version for p in plans[host].pins}


def _status(out: DeployOutcome) -> dict[str, str]:
    return {r.name: r.status for r in out.results}


def test_each_family_deploys_with_its_own_manager_then_converges(env: Path) -> None:
    first = deploy(env, _request(env))
    assert first.exit_code == 0, [(r.name, r.error) for r in first.results]
    assert {n: s for n, s in _status(first).items() if n in NODES} == dict.fromkeys(NODES, "changed")
    state = _state(env)
    for host in NODES:
        want = _pins(env, host)
        have = dict(line.split("=", 1) for line in state[host]["versions"].splitlines() if "=" in line)
        assert have == want, host
    assert "nvidia-driver-550=" in state["gpu01"]["versions"] and "nvidia-open=" in state["gpu07"]["versions"]
    assert "nvidia-driver-pinning-550" in state["gpu07"]["held"] and "nvidia-open" in state["gpu07"]["held"]
    locks = state["gpu08"]["held"]
    assert all(f"{name}-0:{version}.*" in locks for name, version in _pins(env, "gpu08").items()), locks
    assert "nvidia-driver" in _sh(env, "gpu08", "dnf -q module list --enabled 2>/dev/null")  # the stream, enabled
    assert "[clusterforge]" in _sh(env, "gpu08", "cat /etc/yum.repos.d/clusterforge.repo")
    assert _sh(env, "gpu08", "ls /etc/apt/preferences.d/ 2>/dev/null").strip() == ""  # no apt file on EL
    again = deploy(env, _request(env))
    assert again.exit_code == 0 and sum(len(r.changes) for r in again.results) == 0, again.results
    # validate reads each host's versions from its own manager (rpm -q on the EL one): clean
    code, out = cf("validate", str(env), "--limit", ",".join(NODES), "--format", "json")
    assert code == 0, out
    assert not [f for f in json.loads(out)["findings"] if f["rule"] == "SW-VERSION"], out


def test_ansible_writes_the_same_bytes_and_state(env: Path) -> None:
    ours = _state(env)
    lab = read_state(paths(env).state_dir)
    assert lab is not None
    # fresh containers, then Ansible alone: the same files, versions and holds or locks as pyinfra's
    code, out = cf("lab", "down", str(env))
    assert code == 0, out
    code, out = cf("lab", "up", str(env))
    assert code == 0, out
    ans = deploy_ansible(env, _request(env))
    assert ans.exit_code == 0, [(r.name, r.error) for r in ans.results]
    theirs = _state(env)
    assert theirs == ours
    again = deploy_ansible(env, _request(env))
    assert again.exit_code == 0 and all("ansible: changed=0 " in " ".join(r.notes) for r in again.results), \
        [(r.name, r.notes) for r in again.results]
    assert sum(len(r.changes) for r in deploy(env, _request(env)).results) == 0  # and pyinfra agrees


def test_a_driver_bump_on_the_el_node_is_planned_applied_and_relocked(env: Path) -> None:
    import shutil

    start = deploy(env, _request(env))  # as built (a no-op after the tests above)
    assert start.exit_code == 0, [(r.name, r.error) for r in start.results]
    old = env.parent / "asbuilt-os"
    shutil.copytree(env, old)
    services = env / "services.yaml"
    services.write_text(services.read_text().replace("nvidia_driver: 550.90.07", f"nvidia_driver: {BUMP}"))
    plan = env.parent / "bump.json"
    try:
        code, out = cf("diff", str(old), str(env), "--output", str(plan))
        assert code == 0, out
        steps = json.loads(plan.read_text())["steps"]
        # the pin is every GPU node's: waves of drain, deploy, resume; one of them deploys gpu08
        deploys = [s for s in steps if s["argv"][1:2] == ["deploy"]]
        assert any(s["subject"] == "gpu08" for s in deploys), steps
        code, out = cf("apply", str(plan))
        assert code == 0, out
        versions = _sh(env, "gpu08", "rpm -q --qf '%{NAME}=%{VERSION}-%{RELEASE}\\n' nvidia-open nvidia-fabric-manager")
        assert versions.split() == [f"nvidia-open={BUMP}-1", f"nvidia-fabric-manager={BUMP}-1"]
        locks = _sh(env, "gpu08", "dnf -q versionlock list")
        assert f"nvidia-open-0:{BUMP}-1.*" in locks and "550.90.07" not in locks, locks
    finally:
        services.write_text(services.read_text().replace(f"nvidia_driver: {BUMP}", "nvidia_driver: 550.90.07"))
    back = deploy(env, _request(env, limit=("gpu08",)))
    assert back.exit_code == 0, [(r.name, r.error) for r in back.results]
    assert hashlib.sha256(_sh(env, "gpu08", "dnf -q versionlock list").encode()).hexdigest()  # readable again
