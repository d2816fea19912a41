"""lab/observe.py: the lab's views (by node description) of ibnetdiscover, iblinkinfo and ibstat, parsed by
clusterforge.parse. Inputs are real outputs of the lab's fabric (tests/fixtures/validate-lab, ibsim 0.10 +
OpenSM, infiniband-diags 44.0; tests/fixtures/ibstat/clusterforge-lab-umad2sim-2hca-hdr.txt)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from clusterforge.lab.observe import (
    GBPS_TO_SPEED,
    ParseError,
    parse_iblinkinfo,
    parse_ibnetdiscover,
    parse_ibstat,
)
from clusterforge.parse import iblinkinfo

FIX = Path(__file__).resolve().parents[1] / "fixtures"
LAB = FIX / "validate-lab"


def _text(case: str, tool: str) -> str:
    return (LAB / case / f"{tool}.txt").read_text()


def test_discovery_of_the_clean_lab_fabric() -> None:
    disc = parse_ibnetdiscover(_text("clean", "ibnetdiscover"))
    assert Counter(n.kind for n in disc.nodes.values()) == {"Ca": 19, "Switch": 7}
    assert len(disc.links) == 39 and {lk.rate for lk in disc.links.values()} == {"4xHDR"}
    gpu = disc.nodes["gpu01 mlx5_0"]
    assert (gpu.kind, gpu.nports, gpu.lid) == ("Ca", 1, None)
    assert gpu.guid.startswith("0x") and len(gpu.guid) == 18
    assert disc.peer(("gpu01 mlx5_0", 1)) == ("leaf-su01-r0", 1)
    assert disc.lid_of(("gpu01 mlx5_0", 1)) == disc.port_lids[("gpu01 mlx5_0", 1)] == 15
    assert disc.lid_of(("leaf-su01-r0", 1)) == disc.nodes["leaf-su01-r0"].lid
    assert disc.directed_route("sm01 mlx5_0", "gpu01 mlx5_0") == "0,1,21,1,1"


def test_faults_as_the_views_see_them() -> None:
    spine = parse_ibnetdiscover(_text("spine", "ibnetdiscover"))
    assert "spine02" not in spine.nodes and len(spine.links) == 29
    degraded = parse_ibnetdiscover(_text("degrade", "ibnetdiscover"))
    assert degraded.rate(("leaf-su01-r0", 21)) == "1xHDR"
    ports = parse_iblinkinfo(_text("degrade", "iblinkinfo"))
    p = ports[("leaf-su01-r0", 21)]
    assert (p.width, p.speed, p.rate, p.state, p.peer) == ("1X", "HDR", "1XHDR", "Active", ("spine01", 1))
    down = parse_iblinkinfo(_text("down", "iblinkinfo"))[("leaf-su01-r0", 3)]
    assert (down.state, down.phys, down.peer) == ("Active", "Disabled", None)
    idle = [p for p in parse_iblinkinfo(_text("clean", "iblinkinfo")).values() if p.state == "Down"]
    assert idle and all(p.width is None and p.rate is None and p.peer is None for p in idle)


def test_ibstat_of_a_lab_host() -> None:
    cas = parse_ibstat((FIX / "ibstat" / "clusterforge-lab-umad2sim-2hca-hdr.txt").read_text())
    assert [c.name for c in cas] == ["mlx5_0", "mlx5_1"] and cas[0].node_guid == "0x02cf48efff690da0"
    assert [(p.port, p.state, p.phys, p.rate, p.lid) for p in cas[0].ports] == [(1, "Active", "LinkUp", "200", 15)]


def test_one_speed_table() -> None:
    assert GBPS_TO_SPEED is iblinkinfo.SPEED_NAMES


@pytest.mark.parametrize(("tool", "parse"), [("ibnetdiscover", parse_ibnetdiscover),
                                             ("iblinkinfo", parse_iblinkinfo)])
def test_cut_output_is_a_parse_error_not_a_smaller_fabric(tool: str, parse: Callable[[str], object]) -> None:
    lines = _text("clean", tool).splitlines(keepends=True)
    cut = "".join(lines[: len(lines) // 2]) + lines[len(lines) // 2][:12] + "\n"
    with pytest.raises(ParseError, match=r"line \d+"):
        parse(cut)
