"""The scale lab's pure parts (lab/scale_plan.py): the address plan for N targets and the memory refusal."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from clusterforge.deploy.ansible import FORK_MB, bounded_forks
from clusterforge.lab.hosts.scale import mem_available_mb
from clusterforge.lab.hosts.scale_plan import (
    FREE_FLOOR_MB,
    SEGMENT_TARGETS,
    SUBNET,
    ScaleError,
    ScaleRefused,
    address_plan,
    bridge_mac,
    bring_up_lines,
    capacity,
    check_room,
    largest_fitting,
    missing_neighbours,
    need_mb,
    overlapping,
    target_mac,
)


@pytest.mark.parametrize("n", [1, 8, 128, 256, 512, 1024, 2048, 4000])
def test_the_plan_holds_n_distinct_addresses_inside_its_subnet(n: int) -> None:
    plan = address_plan(n)
    net = ipaddress.IPv4Network(SUBNET)
    assert len(plan.addresses) == len(set(plan.addresses)) == n
    assert all(ipaddress.IPv4Address(a) in net for a in plan.addresses)
    assert len(plan.segments) == -(-n // SEGMENT_TARGETS)  # a bridge holds at most 1,024 ports
    for i, a in enumerate(plan.addresses):
        seg = plan.segment_of(i)
        addr = ipaddress.IPv4Address(a)
        assert addr in seg.network and a != seg.gateway
        assert addr not in (seg.network.network_address, seg.network.broadcast_address)
    gateways = {s.gateway for s in plan.segments}
    assert not gateways & set(plan.addresses)


def test_past_245_hosts_where_the_old_bench_plan_stopped() -> None:
    plan = address_plan(1024)
    assert plan.addresses[0] == "198.19.224.10"
    assert plan.addresses[245] == "198.19.224.255"  # a /22: .255 of its first /24 is a host
    assert plan.addresses[999] == "198.19.227.241"  # the last of segment 0 (.10 + 999 of its /22)
    assert plan.segment_of(1000).bridge == "cfscbr1" and plan.addresses[1000] == "198.19.228.10"


def test_the_plan_refuses_what_it_cannot_hold_and_addresses_outside_the_lab_range() -> None:
    assert capacity() == 4 * SEGMENT_TARGETS
    with pytest.raises(ScaleError, match="holds 1 to 4,000"):
        address_plan(4001)
    with pytest.raises(ScaleError):
        address_plan(0)
    with pytest.raises(ScaleError, match="outside the benchmark range"):
        address_plan(8, "10.0.0.0/20")
    with pytest.raises(ScaleError, match="narrower"):
        address_plan(8, "198.18.1.0/24")


def test_overlap_with_networks_in_use() -> None:
    assert overlapping("198.19.224.0/20", ["198.19.230.1/24", "10.0.0.5/8", "198.19.240.1/24"]) == ["198.19.230.1/24"]


def test_room_arithmetic_and_the_refusal_message() -> None:
    assert need_mb(1024, 5.0) == 5120
    assert need_mb(1024, 5.0, controller_mb_per_host=2.0, controller_mb=100) == 1024 * 7 + 100
    # 20,000 MiB available, 5 MiB a target, 2 a host on the controller: (20,000 - 6,144) // 7
    assert largest_fitting(20_000, 5.0, 2.0) == (20_000 - FREE_FLOOR_MB) // 7
    check_room(1979, 20_000, 5.0, 2.0)  # 6,147 MiB left: fits
    with pytest.raises(ScaleRefused) as exc:
        check_room(2048, 20_000, 5.0, 2.0)
    msg = str(exc.value)
    assert "2,048 targets would leave 5,664 MiB free, under the floor of 6,144 MiB" in msg
    assert "the largest size that fits is 1,979 targets" in msg and "Nothing was started" in msg
    with pytest.raises(ScaleRefused, match="largest size that fits is 0 targets"):
        check_room(1, 6_000, 1.0)


def test_mem_available_is_read_from_meminfo(tmp_path: Path) -> None:
    f = tmp_path / "meminfo"
    f.write_text("MemTotal:       24000000 kB\nMemAvailable:   20480000 kB\n")
    assert mem_available_mb(f) == 20_000
    f.write_text("MemTotal:       24000000 kB\n")
    with pytest.raises(ScaleError):
        mem_available_mb(f)


def test_ansible_forks_are_bounded_by_memory_never_one_per_host() -> None:
    assert bounded_forks(64, 1024, available_mb=22_000) == 64
    assert bounded_forks(1024, 1024, available_mb=22_000) == (22_000 - FREE_FLOOR_MB) // FORK_MB
    assert bounded_forks(64, 8, available_mb=22_000) == 8
    assert bounded_forks(64, 1024, available_mb=6_000) == 1  # that tight: one at a time


def test_target_macs_are_distinct_and_locally_administered() -> None:
    from clusterforge.lab.hosts.scale_plan import target_mac

    macs = [target_mac(i) for i in range(4000)]
    assert len(set(macs)) == 4000 and target_mac(0) == "02:cf:5c:00:00:00" and target_mac(1023) == "02:cf:5c:00:03:ff"


def test_bridges_have_a_fixed_mac_and_the_neighbour_entries_come_after_every_port() -> None:
    plan = address_plan(1500)
    lines = bring_up_lines(plan, 1500)
    bridges = [line for line in lines if line.endswith("type bridge")]
    assert bridges == [f"link add {s.bridge} address {bridge_mac(k)} type bridge"
                       for k, s in enumerate(plan.segments[:2])]
    last_port = max(i for i, line in enumerate(lines) if " master " in line)
    neigh = [i for i, line in enumerate(lines) if line.startswith("neigh ")]
    assert len(neigh) == 1500 and min(neigh) > last_port
    assert lines[neigh[1001]] == (f"neigh replace {plan.addresses[1001]} lladdr {target_mac(1001)} "
                                  f"dev {plan.segments[1].bridge} nud permanent")


def test_missing_neighbours_reads_ip_json() -> None:
    out = ('[{"dst":"198.19.224.10","dev":"cfscbr0","lladdr":"02:cf:5c:00:00:00","state":["PERMANENT"]},'
           '{"dst":"198.19.224.12","dev":"cfscbr0","lladdr":"02:cf:5c:00:00:02","state":["STALE"]}]')
    assert missing_neighbours(["198.19.224.10", "198.19.224.11", "198.19.224.12"], out) == [
        "198.19.224.11", "198.19.224.12"]
    assert missing_neighbours(["198.19.224.10"], "") == ["198.19.224.10"]
