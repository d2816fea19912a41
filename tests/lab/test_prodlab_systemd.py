"""The default prod rehearsal on a systemd lab (what `make deploy ENV=prod LAB=1` does): a GPU rack, both
SM nodes and one Lustre server in containers with systemd as PID 1, the whole prod fabric simulated. The
deploy (pyinfra, then Ansible on fresh containers) enables and starts its units: the OpenSM HA pair comes
up master (priority 15) and standby (14) as `sminfo` shows from a GPU node, persistenced, fabricmanager,
openibd and the Lustre mount are active; the second run changes nothing; validate is clean.

A copy of inventories/prod (`prodsd`) on its own free /20 and lab root. Run under `flock /tmp/cf-lab.lock`.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_prodlab import cf, free_block

from clusterforge import labenv
from clusterforge.deploy.ansible_api import deploy_ansible
from clusterforge.deploy.api import DeployRequest
from clusterforge.lab import ssh_command
from clusterforge.lab.proc import run

ROOT = Path(__file__).resolve().parents[2]
NODES = ["gpu0001", "gpu0002", "gpu0003", "gpu0004", "sm01", "sm02", "lus01"]
pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def prodsd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if shutil.which("podman") is None or shutil.which("ibsim") is None:
        pytest.fail("the lab needs podman and ibsim: run scripts/lab-deps.sh (CI does)")
    base = tmp_path_factory.mktemp("prodsd")
    env = base / "prodsd"
    shutil.copytree(ROOT / "inventories" / "prod", env)
    mp = pytest.MonkeyPatch()
    mp.setenv("CLUSTERFORGE_LAB_ROOT", str(base / "state"))
    code, out = cf("lab", "up", str(env), "--systemd", "--no-start-sm", "--cidr", free_block())
    try:
        assert code == 0, out
        yield env
    finally:
        code, out = cf("lab", "down", str(env))
        mp.undo()
    assert code == 0, out


def _services(env: Path) -> dict[str, object]:
    code, out = cf("lab", "services", str(env), "--format", "json")
    data: dict[str, object] = json.loads(out[out.index("{"):])
    data["exit"] = code
    return data


def test_the_deploy_starts_its_units_and_the_sm_pair_elects(prodsd: Path, tmp_path: Path) -> None:
    state = labenv.running(prodsd)
    assert state is not None and sorted(state.hosts) == sorted(NODES)
    pid1 = run(ssh_command(state, "gpu0001", ["cat", "/proc/1/comm"]), timeout=60).stdout.strip()
    assert pid1 == "systemd"
    before = _services(prodsd)
    assert before["exit"] == 1  # nothing enabled yet, no SM: not ok
    plan = tmp_path / "result.json"
    code, out = cf("deploy", str(prodsd), "--no-diffs", "--plan-file", str(plan))
    assert code == 0, out
    hosts = json.loads(plan.read_text())["hosts"]
    assert "no systemd" not in out
    started = {(h, c["target"]) for h, r in hosts.items() for c in r["changes"] if c["kind"] == "service"}
    assert {("sm01", "opensm"), ("sm02", "opensm"), ("gpu0001", "nvidia-persistenced"),
            ("gpu0001", "lustre-lfs01.mount"), ("lus01", "openibd")} <= started
    after = _services(prodsd)
    assert after["exit"] == 0, after
    units = after["units"]
    assert isinstance(units, list) and len(units) == 21 and all(u["active"] == "active" for u in units)
    sms = after["subnet_managers"]
    assert sms == {"sm01": "priority 15 state 3 SMINFO_MASTER", "sm02": "priority 14 state 2 SMINFO_STANDBY"}
    master = run(ssh_command(state, "gpu0003", ["sminfo"]), timeout=60).stdout
    assert "priority 15" in master and "SMINFO_MASTER" in master
    mount = run(ssh_command(state, "gpu0002", ["cat", "/lustre/lfs01/CLUSTERFORGE-LAB-STAND-IN"]), timeout=60)
    # the MGS NID (prod's lus01 IPoIB address) is written into the unit, never contacted: the stand-in mounts a tmpfs
    assert mount.stdout.startswith("LAB-ONLY stand-in for Lustre 10.100.")
    assert "@o2ib0:/lfs01: an empty tmpfs" in mount.stdout
    code, out = cf("deploy", str(prodsd), "--no-diffs", "--plan-file", str(plan))
    assert code == 0, out
    assert sum(len(r["changes"]) for r in json.loads(plan.read_text())["hosts"].values()) == 0
    code, out = cf("validate", str(prodsd))
    assert code == 0 and "clean" in out, out


def test_ansible_on_fresh_containers_reaches_the_same_state(prodsd: Path) -> None:
    state = labenv.running(prodsd)
    assert state is not None
    cidr = state.network_cidr
    code, out = cf("lab", "down", str(prodsd))  # fresh containers: the deploy starts from the image again
    assert code == 0, out
    code, out = cf("lab", "up", str(prodsd), "--systemd", "--no-start-sm", "--cidr", cidr)
    assert code == 0, out
    result = deploy_ansible(prodsd, DeployRequest(lab_state=labenv.paths(prodsd).state_dir))
    assert result.exit_code == 0, [(r.name, r.error) for r in result.results]
    assert sorted(r.name for r in result.results) == sorted(NODES)
    after = _services(prodsd)
    assert after["exit"] == 0, after
    assert after["subnet_managers"] == {"sm01": "priority 15 state 3 SMINFO_MASTER",
                                        "sm02": "priority 14 state 2 SMINFO_STANDBY"}
    code, out = cf("deploy", str(prodsd), "--no-diffs")  # pyinfra after Ansible: nothing to do
    assert code == 0, out
    assert "7 host(s), 0 change(s)" in out
