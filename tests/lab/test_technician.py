"""The lab technician on a real simulated fabric (ibsim local mode + OpenSM, no containers, no root):
move a node's cable to another leaf port, replace a switch with a new GUID, and pick up after a run
killed between ibsim's change and the journal line. Checked against what ibnetdiscover finds."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterforge.lab.errors import FaultError
from clusterforge.lab.fabric_tools import FabricClient, ibnetdiscover, start_opensm, stop_opensm
from clusterforge.lab.faults import FaultInjector, PortRef
from clusterforge.lab.ibsim import Console, LocalEndpoint, start_ibsim, stop_ibsim
from clusterforge.lab.netfile import Endpoint, parse_netfile
from clusterforge.lab.observe import parse_ibnetdiscover
from clusterforge.lab.technician import Technician, cabled_peers, read_journal

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("fabric_tools")]


@pytest.fixture()
def hands(tmp_path: Path, fixture_netfile: Path, fabric_tools: None) -> Iterator[tuple[Technician, FabricClient]]:
    sim = start_ibsim(fixture_netfile, tmp_path / "ibsim", LocalEndpoint(f"cf-tech-{os.getpid()}"))
    client = FabricClient(sim.endpoint, "sm01-mlx5_0", tmp_path / "scratch")
    sm = start_opensm(client, "sm01 mlx5_0", tmp_path / "opensm", sweep_interval=1)
    try:
        yield Technician(Console(sim), parse_netfile(fixture_netfile), tmp_path), client
    finally:
        stop_opensm(sm)
        stop_ibsim(sim)


def injector(tech: Technician, client: FabricClient) -> FaultInjector:
    """As lab.fault_injector builds it: from the cabling the technician left."""
    return FaultInjector(tech.console, tech.net, client, tech.state_dir / "faults.json",
                         cabled_peers(tech.net, read_journal(tech.state_dir)))


def test_move_a_node_cable_to_another_leaf_port(hands: tuple[Technician, FabricClient]) -> None:
    tech, client = hands
    old = tech.move(PortRef("gpu01 mlx5_0", 1), PortRef("leaf01", 5))
    assert old == Endpoint("leaf01", 1)
    disc = injector(tech, client).wait_converged(timeout=60)  # what the journal says is what the fabric shows
    assert frozenset({("gpu01 mlx5_0", 1), ("leaf01", 5)}) in disc.links
    assert not any(("leaf01", 1) in k for k in disc.links)
    with pytest.raises(FaultError, match="has no cable plugged in"):
        tech.unplug(PortRef("leaf01", 1))
    with pytest.raises(FaultError, match="is in use"):
        tech.plug(PortRef("leaf01", 5), PortRef("gpu02 mlx5_0", 1))
    with pytest.raises(FaultError, match="goes to leaf01 port 5, not leaf01 port 1"):
        tech.unplug(PortRef("gpu01 mlx5_0", 1), expect=PortRef("leaf01", 1))


def test_replace_a_switch_with_a_new_guid(hands: tuple[Technician, FabricClient]) -> None:
    tech, client = hands
    before = parse_ibnetdiscover(ibnetdiscover(client))
    assert tech.replace("leaf02", "0x0002c90300abcd02") == 5
    disc = injector(tech, client).wait_converged(timeout=60)
    assert disc.nodes["leaf02"].guid.endswith("2c90300abcd02")
    assert disc.nodes["leaf02"].guid != before.nodes["leaf02"].guid
    assert set(disc.links) == set(before.links)  # every cable back in the same port


def test_a_kill_between_the_fabric_and_the_journal_is_picked_up(hands: tuple[Technician, FabricClient]) -> None:
    tech, client = hands
    a, b = PortRef("gpu02 mlx5_1", 1), PortRef("leaf02", 2)
    tech.console.command('Unlink "leaf02"[2]')  # done in ibsim, never journaled
    assert tech.ensure_unplugged(a, b) is False
    assert [e["op"] for e in tech.journal()] == ["unplug"]
    assert tech.ensure_unplugged(a, b) is False and len(tech.journal()) == 1
    assert tech.ensure_plugged(a, b) is True
    assert tech.ensure_plugged(a, b) is False and [e["op"] for e in tech.journal()] == ["unplug", "plug"]
    injector(tech, client).wait_converged(timeout=60)
