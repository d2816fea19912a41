"""Container lab tests: podman hosts with sshd on the simulated fabric.

One lab for the whole module (up once; the image is built on first use and
cached), torn down by the last test, which checks nothing is left behind.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterforge.lab import (
    LabHca,
    LabHost,
    LabSpec,
    LabState,
    PortRef,
    down,
    fault_injector,
    read_state,
    ssh_command,
    status,
    up,
)
from clusterforge.lab.hosts.containers import network_info
from clusterforge.lab.hosts.netns import link_exists, netns_exists
from clusterforge.lab.hosts.podman import LABEL, ids_with_label
from clusterforge.lab.ibsim import ibsim_running
from clusterforge.lab.observe import parse_ibnetdiscover, parse_ibstat
from clusterforge.lab.proc import Result, run
from clusterforge.lab.sshkeys import write_known_hosts

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("container_tools")]

DEVICES = {
    "gpu01": ["mlx5_0", "mlx5_1"],
    "gpu02": ["mlx5_0", "mlx5_1"],
    "stor01": ["mlx5_0"],
    "sm01": ["mlx5_0"],
}


def _spec(subnet: str, state_dir: Path, netfile: Path) -> LabSpec:
    base = subnet.rsplit(".", 1)[0]
    return LabSpec(
        name=f"t{os.getpid()}",
        network_cidr=subnet,
        hosts=(
            LabHost("gpu01", f"{base}.11", (LabHca("mlx5_0", "gpu01-mlx5_0"),
                                            LabHca("mlx5_1", "gpu01 mlx5_1"))),
            LabHost("gpu02", f"{base}.12", (LabHca("mlx5_0", "gpu02-mlx5_0"),
                                            LabHca("mlx5_1", "gpu02-mlx5_1"))),
            LabHost("stor01", f"{base}.13", (LabHca("mlx5_0", "stor01-mlx5_0"),),
                    role="storage"),
            LabHost("sm01", f"{base}.14", (LabHca("mlx5_0", "sm01-mlx5_0"),),
                    role="subnet-manager"),
        ),
        netfile=netfile,
        state_dir=state_dir,
        sm_sweep_interval=1,
    )


@pytest.fixture(scope="module")
def spec(lab_subnet: str, tmp_path_factory: pytest.TempPathFactory,
         fixture_netfile: Path) -> LabSpec:
    return _spec(lab_subnet, tmp_path_factory.mktemp("lab") / "state", fixture_netfile)


@pytest.fixture(scope="module")
def lab(spec: LabSpec) -> Iterator[LabState]:
    started = time.monotonic()
    try:
        state = up(spec)
        print(f"\nlab up in {time.monotonic() - started:.1f}s (image {state.image})")
        yield state
    finally:
        down(spec.state_dir)


def ssh(state: LabState, host: str, *command: str, timeout: float = 60) -> Result:
    return run(ssh_command(state, host, list(command)), timeout=timeout, check=False)


def test_up_is_healthy_podman_mode(lab: LabState) -> None:
    st = status(lab.state_dir)
    assert st.mode == "podman" and st.healthy, st
    assert {h.name for h in st.hosts} == set(DEVICES)
    assert lab.ibsim is not None and ibsim_running(lab.ibsim)
    info = network_info(lab.network)
    assert info is not None and info.subnet == lab.network_cidr and info.gateway == lab.gateway
    assert (lab.state_dir / "keys" / "id_ed25519").stat().st_mode & 0o777 == 0o600


def test_ssh_hostname_with_strict_host_key_checking(lab: LabState) -> None:
    for host in DEVICES:
        argv = ssh_command(lab, host, ["hostname"])
        assert "StrictHostKeyChecking=yes" in argv
        assert f"UserKnownHostsFile={lab.known_hosts}" in argv
        res = run(argv, timeout=30, check=False)
        assert (res.returncode, res.stdout.strip()) == (0, host), res.stderr


def test_minimal_quiet_shell(lab: LabState) -> None:
    res = ssh(lab, "gpu02", "true")
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")
    res = ssh(lab, "gpu02", "sh", "-c", "wc -c < /root/.bashrc; command -v python3; command -v sudo")
    size, *paths = res.stdout.split()
    assert int(size) < 200
    assert paths == ["/usr/bin/python3", "/usr/bin/sudo"]


def test_wrong_host_key_is_refused(lab: LabState, tmp_path: Path) -> None:
    lines = lab.known_hosts.read_text().splitlines()
    by_host = {ln.split(",", 1)[0]: ln for ln in lines}
    # give gpu01 the key of gpu02: a strict client must refuse to connect
    forged = by_host["gpu01"].split()[0] + " " + " ".join(by_host["gpu02"].split()[1:])
    bad = tmp_path / "known_hosts"
    write_known_hosts(bad, [forged])
    argv = ssh_command(lab, "gpu01", ["hostname"])
    argv = [a.replace(f"UserKnownHostsFile={lab.known_hosts}", f"UserKnownHostsFile={bad}")
            for a in argv]
    res = run(argv, timeout=30, check=False)
    assert res.returncode == 255 and res.stdout == ""
    assert "verification failed" in res.stderr.lower() or "changed" in res.stderr.lower()


def test_ibstat_inside_each_host_active_at_200(lab: LabState) -> None:
    for host, devices in DEVICES.items():
        res = ssh(lab, host, "ibstat")
        assert res.returncode == 0, (host, res.stderr)
        assert "ibwarn" not in res.stderr
        cas = parse_ibstat(res.stdout)
        assert [c.name for c in cas] == devices, host
        for ca in cas:
            assert [(p.state, p.phys, p.rate) for p in ca.ports] == [
                ("Active", "LinkUp", "200")], (host, ca)
        assert ssh(lab, host, "ibstat", "-l").stdout.split() == devices
    one = parse_ibstat(ssh(lab, "gpu01", "ibstat", "mlx5_1").stdout)
    assert [c.name for c in one] == ["mlx5_1"]
    assert one[0].node_guid != parse_ibstat(ssh(lab, "gpu01", "ibstat", "mlx5_0").stdout)[0].node_guid


def test_sm_container_runs_opensm_and_hosts_see_the_fabric(lab: LabState) -> None:
    assert ssh(lab, "sm01", "pgrep", "-x", "opensm").returncode == 0
    assert ssh(lab, "gpu01", "pgrep", "-x", "opensm").returncode == 1
    res = ssh(lab, "gpu02", "ibnetdiscover")
    assert res.returncode == 0, res.stderr
    disc = parse_ibnetdiscover(res.stdout)
    assert {d for d, n in disc.nodes.items() if n.kind == "Switch"} == {
        "spine01", "leaf01", "leaf02"}
    assert len([n for n in disc.nodes.values() if n.kind == "Ca"]) == 6
    assert len(disc.links) == 10 and {link.rate for link in disc.links.values()} == {"4xHDR"}
    # -C selects the HCA: gpu02's second HCA sits on leaf02
    res = ssh(lab, "gpu02", "smpquery", "-C", "mlx5_1", "-D", "nodedesc", "0,1")
    assert res.returncode == 0 and "leaf02" in res.stdout, res.stderr


def _port_state(lab: LabState, host: str, device: str) -> str:
    cas = parse_ibstat(ssh(lab, host, "ibstat", device).stdout)
    return cas[0].ports[0].state if cas else "?"


def _wait_state(lab: LabState, host: str, device: str, want: str, timeout: float = 40) -> None:
    deadline = time.monotonic() + timeout
    got = ""
    while time.monotonic() < deadline:
        got = _port_state(lab, host, device)
        if got == want:
            return
        time.sleep(0.5)
    raise AssertionError(f"{host} {device}: port {got!r}, wanted {want!r}")


def test_fault_is_seen_inside_the_host_and_heals(lab: LabState) -> None:
    faults = fault_injector(lab)
    faults.remove(PortRef("gpu01 mlx5_0", 1))
    _wait_state(lab, "gpu01", "mlx5_0", "Down")
    assert _port_state(lab, "gpu01", "mlx5_1") == "Active"
    assert status(lab.state_dir).faults == 1
    faults.heal()
    _wait_state(lab, "gpu01", "mlx5_0", "Active")
    faults.wait_converged(timeout=60)


def test_second_lab_without_sm_leaves_it_to_the_deploy(
    lab: LabState, another_lab_subnet: str, tmp_path: Path, fixture_netfile: Path
) -> None:
    """A second lab runs next to the first; with start_sm=False the deploy starts OpenSM."""
    base = another_lab_subnet.rsplit(".", 1)[0]
    spec2 = LabSpec(
        name=f"u{os.getpid()}", network_cidr=another_lab_subnet,
        hosts=(LabHost("gpu09", f"{base}.11", (LabHca("mlx5_0", "gpu01-mlx5_0"),)),
               LabHost("sm09", f"{base}.14", (LabHca("mlx5_0", "sm01-mlx5_0"),),
                       role="subnet-manager")),
        netfile=fixture_netfile, state_dir=tmp_path / "state2", start_sm=False,
    )
    second = up(spec2)
    try:
        assert second.opensm_host == "" and status(spec2.state_dir).healthy
        assert _port_state(second, "gpu09", "mlx5_0") == "Initializing"  # no SM swept yet
        res = ssh(second, "sm09", "opensm", "-B", "-f", "/var/log/opensm.log", "-s", "1")
        assert res.returncode == 0, res.stderr
        _wait_state(second, "gpu09", "mlx5_0", "Active")
        # the first lab is untouched by the second one
        assert _port_state(lab, "gpu01", "mlx5_0") == "Active"
        assert ssh(lab, "gpu01", "hostname").stdout.strip() == "gpu01"
    finally:
        down(spec2.state_dir)
    assert read_state(spec2.state_dir) is None


def test_up_again_changes_nothing(lab: LabState, spec: LabSpec) -> None:
    started = time.monotonic()
    again = up(spec)
    assert time.monotonic() - started < 30
    assert again.to_json() == lab.to_json()
    assert read_state(spec.state_dir) is not None


def test_down_leaves_nothing_behind(lab: LabState, spec: LabSpec) -> None:
    assert lab.ibsim is not None
    down(spec.state_dir)
    assert ids_with_label("container", lab.lab) == []
    assert ids_with_label("network", lab.lab) == []
    assert network_info(lab.network) is None
    assert not ibsim_running(lab.ibsim)
    assert not netns_exists(lab.netns)
    assert not link_exists(lab.veth) and not link_exists(lab.bridge)
    assert read_state(spec.state_dir) is None
    assert LABEL  # the label used above is the one containers/networks get
    down(spec.state_dir)  # idempotent
    with pytest.raises(Exception, match="no lab recorded"):
        status(spec.state_dir)
