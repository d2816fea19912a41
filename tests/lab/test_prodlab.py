"""A prod-shaped lab end to end: one rack of prod's GPU nodes in containers, the whole prod fabric
(48 switches, 534 HCA ports) in ibsim, OpenSM beside the simulator as sm01's HCA (no SM node selected);
prod's own files and pins deployed to it (second run: 0 changes), validated clean, faults on prod cables
reported exactly, nothing left after `lab down`.

A copy of inventories/prod (named `prodlab`) on its own free /20 and lab root, so a developer's prod lab is
left alone. Run under `flock /tmp/cf-lab.lock`.
"""

from __future__ import annotations

import ipaddress
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cf_lab_net import cf, free_block
from clusterforge.api import load_checked
from clusterforge.deploy.api import DeployRequest, plans_for
from clusterforge.lab import ssh_command
from clusterforge.lab.proc import run
from clusterforge.rehearsal import env as labenv

ROOT = Path(__file__).resolve().parents[2]
RACK = ["gpu0001", "gpu0002", "gpu0003", "gpu0004"]
pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def prodlab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if shutil.which("podman") is None or shutil.which("ibsim") is None:
        pytest.fail("the lab needs podman and ibsim: run scripts/lab-deps.sh (CI does)")
    base = tmp_path_factory.mktemp("prodlab")
    env = base / "prodlab"
    shutil.copytree(ROOT / "inventories" / "prod", env)
    mp = pytest.MonkeyPatch()
    mp.setenv("CLUSTERFORGE_LAB_ROOT", str(base / "state"))
    cidr = free_block()
    code, out = cf("lab", "up", str(env), "--limit", "prod-su01-r01", "--cidr", cidr)
    try:
        assert code == 0, out
        assert "48 switches, 534 HCA ports simulated; 274 node(s) without a container" in out
        assert "OpenSM beside the simulator" in out
        yield env
    finally:
        code, out = cf("lab", "down", str(env))
        mp.undo()
    assert code == 0, out
    left = subprocess.run(["podman", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True,
                          timeout=60, check=True).stdout.split()
    assert not [n for n in left if "prodlab" in n], left
    networks = subprocess.run(["podman", "network", "ls", "--format", "{{.Name}}"], capture_output=True,
                              text=True, timeout=60, check=True).stdout.split()
    assert "cf-lab-cf-prodlab" not in networks
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10, check=True).stdout
    assert "cf-prodlab" not in netns
    procs = subprocess.run(["pgrep", "-af", str(base)], capture_output=True, text=True, timeout=10,
                           check=False).stdout
    assert not procs.strip(), procs  # no ibsim, no OpenSM of this lab
    assert not (base / "state" / "prodlab" / "state" / "lab.json").exists()
    assert not (base / "state" / "prodlab" / "mapping.json").exists()


def test_rack_selection_runs_named_containers_on_mapped_addresses(prodlab: Path) -> None:
    code, out = cf("lab", "status", str(prodlab), "--format", "json")
    assert code == 0, out
    data = json.loads(out[out.index("{"):])
    assert sorted(data["hosts"]) == RACK
    net = ipaddress.ip_network(data["lab_network"])
    assert data["inventory_network"] == "10.10.0.0/20"
    gpu1 = data["hosts"]["gpu0001"]
    assert gpu1["inventory_address"] == "10.10.0.10"
    assert ipaddress.ip_address(gpu1["lab_address"]) == net.network_address + 10
    assert all(ipaddress.ip_address(h["lab_address"]) in net for h in data["hosts"].values())
    assert data["fabric"] == {"switches": 48, "hca_ports": 534, "hcas": 534}
    assert len(data["without_container"]) == 274 and "sm01" in data["without_container"]
    state = labenv.running(prodlab)
    assert state is not None
    assert run(ssh_command(state, "gpu0003", ["hostname"]), timeout=60).stdout.strip() == "gpu0003"
    ibstat = run(ssh_command(state, "gpu0001", ["ibstat"]), timeout=60).stdout
    assert "CA 'mlx5_0'" in ibstat and "CA 'mlx5_1'" in ibstat and ibstat.count("State: Active") == 2
    sminfo = run(ssh_command(state, "gpu0002", ["sminfo"]), timeout=60).stdout
    assert "priority 15" in sminfo and "SMINFO_MASTER" in sminfo  # sm01's rendered opensm.conf


def test_prod_deployed_to_the_lab_then_nothing_changes(prodlab: Path, tmp_path: Path) -> None:
    plan = tmp_path / "result.json"
    code, out = cf("deploy", str(prodlab), "--no-diffs", "--plan-file", str(plan))
    assert code == 0, out
    assert "4 of 278 host(s) have a container; the other 274 are not deployed" in out
    first = json.loads(plan.read_text())
    hosts = first["hosts"]
    assert sorted(hosts) == RACK and {h["status"] for h in hosts.values()} == {"changed"}
    state = labenv.running(prodlab)
    assert state is not None
    holds = run(ssh_command(state, "gpu0001", ["apt-mark", "showhold"]), timeout=60).stdout.split()
    assert {"nvidia-driver-550", "libnccl2", "doca-ofed", "lustre-client-utils"} <= set(holds)
    # prod's own rendered files, byte for byte (its IPoIB addresses are written, never contacted)
    plans = plans_for(prodlab, DeployRequest(), None, load_checked(prodlab).index)
    for path in ("/etc/nccl.conf", "/etc/lnet.conf"):
        want = next(f.content for f in plans["gpu0004"].files if f.dest == path)
        assert run(ssh_command(state, "gpu0004", ["cat", path]), timeout=60).stdout == want
    code, out = cf("deploy", str(prodlab), "--no-diffs", "--plan-file", str(plan))
    assert code == 0, out
    again = json.loads(plan.read_text())
    assert sum(len(h["changes"]) for h in again["hosts"].values()) == 0 and len(again["hosts"]) == 4
    code, out = cf("validate", str(prodlab))
    assert code == 0, out
    assert "4 of 278 nodes have a container" in out and "clean" in out


def _cable(env: Path, node: str, hca: str) -> tuple[str, str]:
    """(cable id, switch) of a node's HCA cable."""
    checked = load_checked(env)
    c = next(c for c in checked.inv.cables if c.a.device == node and c.a.hca == hca)
    return c.id, c.b.device


def test_faults_on_prod_cables_are_reported_exactly(prodlab: Path) -> None:
    selected, leaf1 = _cable(prodlab, "gpu0001", "mlx5_1")  # a lab host's cable to a switch
    unselected, leaf2 = _cable(prodlab, "gpu0100", "mlx5_0")  # a node without a container
    for fault in (["remove", selected], ["degrade", unselected]):
        code, out = cf("lab", "fault", *fault, "--env", str(prodlab))
        assert code == 0, out
    try:
        code, out = cf("validate", str(prodlab), "--format", "json")
        data = json.loads(out[out.index("{"):])
        found = sorted((f["rule"], f["subject"]) for f in data["findings"])
        assert code == 4
        assert [r for r, _ in found] == ["FAB-DEGRADED", "FAB-PORT-DOWN"], found
        assert found[0][1].startswith("gpu0100 mlx5_0/1 - " + leaf2)
        assert found[1][1].startswith("gpu0001 mlx5_1/1 - " + leaf1)
        actions = " ".join(f["action"] for f in data["findings"])
        assert selected in actions and unselected in actions
    finally:
        code, out = cf("lab", "heal", "--env", str(prodlab))
        assert code == 0, out
    code, out = cf("validate", str(prodlab))
    assert code == 0, out
