"""The fallback mode (no podman): one network namespace + sshd per host.

Skipped unless /usr/sbin/sshd exists (``scripts/lab-deps.sh --netns``).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from clusterforge.lab import LabHca, LabHost, LabSpec, down, read_state, ssh_command, status, up
from clusterforge.lab.hosts.hostns import netns_usable
from clusterforge.lab.hosts.netns import link_exists, netns_exists
from clusterforge.lab.ibsim import ibsim_running
from clusterforge.lab.observe import parse_ibstat
from clusterforge.lab.proc import is_alive, run
from clusterforge.util.ticks import Ticks

pytestmark = [
    pytest.mark.lab,
    pytest.mark.usefixtures("container_tools"),
    pytest.mark.skipif(not netns_usable()[0], reason=netns_usable()[1]),
]


def test_netns_mode_up_ssh_ibstat_down(
    lab_subnet: str, tmp_path: Path, fixture_netfile: Path
) -> None:
    base = lab_subnet.rsplit(".", 1)[0]
    spec = LabSpec(
        name=f"n{os.getpid()}",
        network_cidr=lab_subnet,
        hosts=(
            LabHost("gpu01", f"{base}.11", (LabHca("mlx5_0", "gpu01-mlx5_0"),
                                            LabHca("mlx5_1", "gpu01-mlx5_1"))),
            LabHost("sm01", f"{base}.14", (LabHca("mlx5_0", "sm01-mlx5_0"),),
                    role="subnet-manager"),
        ),
        netfile=fixture_netfile,
        state_dir=tmp_path / "state",
        sm_sweep_interval=1,
    )
    my_hostname = socket.gethostname()
    told: list[tuple[str, int, int]] = []
    state = up(spec, mode="netns", ticks=Ticks(lambda note, done, total: told.append((note, done, total))))
    try:
        assert state.mode == "netns" and status(spec.state_dir).healthy
        # lab up's progress: each host, the simulator, the fabric, ssh; the last tick is the whole
        assert [note for note, _, _ in told] == ["gpu01 running", "sm01 running", "simulator started",
                                                 "fabric active", "ssh up"]
        assert [done for _, done, _ in told] == [1, 2, 3, 4, 5] and {total for _, _, total in told} == {5}
        for host in ("gpu01", "sm01"):
            res = run(ssh_command(state, host, ["hostname"]), timeout=30, check=False)
            assert (res.returncode, res.stdout.strip()) == (0, host), res.stderr
        res = run(ssh_command(state, "gpu01", ["ibstat"]), timeout=60, check=False)
        cas = parse_ibstat(res.stdout)
        assert [(c.name, c.ports[0].state, c.ports[0].rate) for c in cas] == [
            ("mlx5_0", "Active", "200"), ("mlx5_1", "Active", "200")], res.stderr
        assert socket.gethostname() == my_hostname  # the lab machine is untouched
    finally:
        down(spec.state_dir)
    assert read_state(spec.state_dir) is None
    assert state.ibsim is not None and not ibsim_running(state.ibsim)
    assert state.opensm is not None and not is_alive(state.opensm.process)
    for rec in state.hosts.values():
        assert rec.sshd is not None and not is_alive(rec.sshd)
        assert not netns_exists(rec.netns) and not link_exists(rec.veth)
    assert not netns_exists(state.netns) and not link_exists(state.bridge)
