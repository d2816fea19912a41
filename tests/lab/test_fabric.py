"""Fabric-only lab tests: ibsim + OpenSM + diag tools on the host, no containers.

ibsim runs in local mode (unix sockets under a private IBSIM_SOCKNAME), OpenSM
attaches as "sm01 mlx5_0", and every fault is checked against what
ibnetdiscover / iblinkinfo really report.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from clusterforge.lab.errors import CommandError, FaultError
from clusterforge.lab.fabric_tools import (
    FabricClient,
    OpenSm,
    iblinkinfo,
    ibnetdiscover,
    ibstat_many,
    start_opensm,
    stop_opensm,
)
from clusterforge.lab.faults import FaultInjector, PortRef
from clusterforge.lab.ibsim import Console, IbSim, LocalEndpoint, start_ibsim, stop_ibsim
from clusterforge.lab.netfile import NetFile, parse_netfile
from clusterforge.lab.observe import Discovery, parse_iblinkinfo, parse_ibnetdiscover, parse_ibstat
from clusterforge.lab.proc import is_alive

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("fabric_tools")]

SWITCHES = {"spine01", "leaf01", "leaf02"}
CAS = {"gpu01 mlx5_0", "gpu01 mlx5_1", "gpu02 mlx5_0", "gpu02 mlx5_1", "stor01 mlx5_0",
       "sm01 mlx5_0"}
LINKS = {
    frozenset({("leaf01", 1), ("gpu01 mlx5_0", 1)}),
    frozenset({("leaf01", 2), ("gpu02 mlx5_0", 1)}),
    frozenset({("leaf01", 3), ("stor01 mlx5_0", 1)}),
    frozenset({("leaf01", 7), ("spine01", 1)}),
    frozenset({("leaf01", 8), ("spine01", 2)}),
    frozenset({("leaf02", 1), ("gpu01 mlx5_1", 1)}),
    frozenset({("leaf02", 2), ("gpu02 mlx5_1", 1)}),
    frozenset({("leaf02", 3), ("sm01 mlx5_0", 1)}),
    frozenset({("leaf02", 7), ("spine01", 3)}),
    frozenset({("leaf02", 8), ("spine01", 4)}),
}
HEALTHY = dict.fromkeys(LINKS, "4xHDR")


@dataclass
class Fabric:
    sim: IbSim
    sm: OpenSm
    client: FabricClient
    net: NetFile
    faults: FaultInjector
    sockname: str


def _start(tmp: Path, netfile: Path, tag: str) -> Fabric:
    sockname = f"cf-test-{tag}-{os.getpid()}"
    sim = start_ibsim(netfile, tmp / "ibsim", LocalEndpoint(sockname))
    client = FabricClient(sim.endpoint, "sm01-mlx5_0", tmp / "scratch")
    try:
        sm = start_opensm(client, "sm01 mlx5_0", tmp / "opensm", sweep_interval=1)
    except BaseException:
        stop_ibsim(sim)
        raise
    net = parse_netfile(netfile)
    return Fabric(sim, sm, client, net,
                  FaultInjector(Console(sim), net, client, tmp / "faults.json"), sockname)


def _stop(fab: Fabric) -> None:
    stop_opensm(fab.sm)
    stop_ibsim(fab.sim)


@pytest.fixture(scope="module")
def fabric(
    tmp_path_factory: pytest.TempPathFactory, fixture_netfile: Path, fabric_tools: None
) -> Iterator[Fabric]:
    fab = _start(tmp_path_factory.mktemp("fabric"), fixture_netfile, "mod")
    try:
        fab.faults.wait_converged(timeout=30)
        yield fab
    finally:
        _stop(fab)


@pytest.fixture
def healed(fabric: Fabric) -> Iterator[Fabric]:
    """Each fault test starts from, and must return to, the net file's fabric."""
    assert not fabric.faults.journal()
    yield fabric
    fabric.faults.heal()
    disc = fabric.faults.wait_converged(timeout=60)
    assert _links(disc) == HEALTHY


def _links(disc: Discovery) -> dict[frozenset[tuple[str, int]], str]:
    return {k: v.rate for k, v in disc.links.items()}


def _discover(fab: Fabric) -> Discovery:
    return parse_ibnetdiscover(ibnetdiscover(fab.client))


def test_discovery_matches_netfile_at_4x_hdr(fabric: Fabric) -> None:
    disc = _discover(fabric)
    assert {d for d, n in disc.nodes.items() if n.kind == "Switch"} == SWITCHES
    assert {d for d, n in disc.nodes.items() if n.kind == "Ca"} == CAS
    assert _links(disc) == HEALTHY
    links = parse_iblinkinfo(iblinkinfo(fabric.client))
    for key in LINKS:
        for end in key:
            assert (links[end].state, links[end].phys, links[end].rate) == (
                "Active", "LinkUp", "4XHDR"), end
    # unused switch ports are really down
    assert (links[("leaf01", 4)].state, links[("leaf01", 4)].peer) == ("Down", None)


def test_ibstat_many_every_hca_active(fabric: Fabric) -> None:
    hcas = [n.node_id for n in fabric.net.cas()]
    results = ibstat_many(fabric.client, hcas, max_concurrent=8)
    assert set(results) == set(hcas)
    for sim_host, res in results.items():
        assert res.returncode == 0, (sim_host, res.stderr)
        (ca,) = parse_ibstat(res.stdout)
        assert ca.name == "ibsim0"  # umad2sim's only CA name: the lab maps it in the guest
        assert [(p.port, p.state, p.phys) for p in ca.ports] == [(1, "Active", "LinkUp")]
        assert ca.ports[0].lid > 0
    with pytest.raises(ValueError):
        ibstat_many(fabric.client, hcas, max_concurrent=10)


def test_console_lists_attached_clients(fabric: Fabric) -> None:
    clients = Console(fabric.sim).attached()
    assert [(c.node, c.is_sm) for c in clients] == [("sm01-mlx5_0", True)]  # OpenSM only
    assert Console(fabric.sim).command("Dump \"leaf01\"").count("\n") > 5


def test_remove_pulls_the_cable(healed: Fabric) -> None:
    healed.faults.remove(PortRef("leaf01", 1))
    disc = healed.faults.wait_converged(timeout=30)
    assert "gpu01 mlx5_0" not in disc.nodes  # its only cable is gone
    assert _links(disc) == {k: v for k, v in HEALTHY.items() if ("leaf01", 1) not in k}
    port = parse_iblinkinfo(iblinkinfo(healed.client))[("leaf01", 1)]
    assert (port.state, port.phys, port.peer) == ("Down", "Polling", None)
    with pytest.raises(FaultError, match="not cabled"):
        healed.faults.remove(PortRef("gpu01 mlx5_0", 1))


def test_swap_exchanges_peers(healed: Fabric) -> None:
    healed.faults.swap(PortRef("leaf02", 1), PortRef("leaf02", 2))
    disc = healed.faults.wait_converged(timeout=30)
    assert disc.peer(("leaf02", 1)) == ("gpu02 mlx5_1", 1)
    assert disc.peer(("leaf02", 2)) == ("gpu01 mlx5_1", 1)
    assert len(disc.links) == 10 and set(disc.nodes) == SWITCHES | CAS
    links = parse_iblinkinfo(iblinkinfo(healed.client))
    assert links[("gpu01 mlx5_1", 1)].peer == ("leaf02", 2)
    assert links[("leaf02", 1)].rate == "4XHDR"


def test_degrade_both_ends_of_a_trunk(healed: Fabric) -> None:
    healed.faults.degrade(PortRef("spine01", 1), width="1X", speed="EDR")
    disc = healed.faults.wait_converged(timeout=30)
    trunk = frozenset({("leaf01", 7), ("spine01", 1)})
    assert _links(disc) == {**HEALTHY, trunk: "1xEDR"}
    links = parse_iblinkinfo(iblinkinfo(healed.client))
    for end in trunk:
        assert (links[end].width, links[end].speed, links[end].state) == ("1X", "EDR", "Active")
    assert links[("leaf01", 8)].rate == "4XHDR"


def test_degrade_host_link_speed_only(healed: Fabric) -> None:
    healed.faults.degrade(PortRef("gpu02 mlx5_0", 1), width="4X", speed="FDR")
    disc = healed.faults.wait_converged(timeout=30)
    assert disc.rate(("gpu02 mlx5_0", 1)) == "4xFDR"
    links = parse_iblinkinfo(iblinkinfo(healed.client))
    assert (links[("leaf01", 2)].width, links[("leaf01", 2)].speed) == ("4X", "FDR")
    # ibsim 0.10 cannot switch extended speeds off at runtime: refused, nothing journaled
    with pytest.raises(FaultError, match="extended speeds"):
        healed.faults.degrade(PortRef("leaf01", 1), width="4X", speed="QDR")
    assert len(healed.faults.journal()) == 1


def test_down_disables_the_port(healed: Fabric) -> None:
    healed.faults.down(PortRef("leaf01", 3))
    disc = healed.faults.wait_converged(timeout=30)
    assert "stor01 mlx5_0" not in disc.nodes
    port = parse_iblinkinfo(iblinkinfo(healed.client))[("leaf01", 3)]
    assert (port.phys, port.peer) == ("Disabled", None)


def test_heal_from_a_fresh_injector_restores_netfile(healed: Fabric, tmp_path: Path) -> None:
    f = healed.faults
    f.remove(PortRef("leaf02", 8))
    f.degrade(PortRef("leaf01", 2), width="1X")
    f.swap(PortRef("leaf01", 7), PortRef("leaf02", 7))
    f.down(PortRef("gpu01 mlx5_1", 1))
    assert [e["kind"] for e in f.journal()] == ["remove", "degrade", "swap", "down"]
    assert _links(f.wait_converged(timeout=30)) != HEALTHY
    # another process would build its own injector from the same journal
    other = FaultInjector(Console(healed.sim), healed.net, healed.client, f.journal_path)
    assert other.heal() == 4
    assert _links(other.wait_converged(timeout=60)) == HEALTHY
    assert f.journal() == []


def test_stop_leaves_nothing_and_clients_time_out(
    tmp_path: Path, fixture_netfile: Path
) -> None:
    fab = _start(tmp_path, fixture_netfile, "stop")
    assert fab.faults.wait_converged(timeout=30).links
    _stop(fab)
    assert not is_alive(fab.sim.process) and not is_alive(fab.sm.process)
    assert not fab.sim.console_path.exists()
    # a client against a dead simulator would wait forever: the timeout must fire
    with pytest.raises(CommandError, match="timed out"):
        ibnetdiscover(fab.client, timeout=2)
    leftovers = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes()
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        if f"IBSIM_SOCKNAME={fab.sockname}".encode() in environ.split(b"\0") and \
                stat.split(") ")[-1][:1] not in ("Z", "X"):
            leftovers.append(proc.name)
    assert leftovers == []
    assert not list((tmp_path / "scratch").glob("*/sys-*"))
