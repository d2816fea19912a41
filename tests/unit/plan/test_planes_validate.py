"""validate on a rail-plane fabric: a cable moved into another plane is its own finding (FAB-PLANE)."""

from __future__ import annotations

import shutil
from pathlib import Path

from _plan_util import ROOT

from clusterforge.api import load_checked
from clusterforge.parse import ibnetdiscover
from clusterforge.sim.ibnetdiscover import from_index, render
from clusterforge.validate.fabric import diff_fabric

ONE = "      - {name: mlx5_0, model: ConnectX-6, netdev: ib0, rail: 0, ports: [{port: 1, rate: HDR}]}\n"
TWO = ONE + "      - {name: mlx5_1, model: ConnectX-6, netdev: ib1, rail: 1, ports: [{port: 1, rate: HDR}]}\n"


def _env(tmp: Path) -> Path:
    env = tmp / "staging"
    shutil.copytree(ROOT / "inventories" / "staging", env)
    (env / "cabling.generated.yaml").unlink()
    fabric = env / "fabric.yaml"
    fabric.write_text(fabric.read_text().replace("  rails: 2\n", "  rails: 2\n  planes: rail\n"))
    hw = env / "hardware.yaml"
    text = hw.read_text()
    at = text.index(ONE, text.index("  - name: sm-node"))
    hw.write_text(text[:at] + TWO + text[at + len(ONE):])
    return env


def test_a_cable_moved_into_another_plane(tmp_path: Path) -> None:
    checked = load_checked(_env(tmp_path))
    index = checked.index
    fab = from_index(index)
    assert diff_fabric(index, ibnetdiscover.parse(render(index, fab))) == []  # clean as planned
    cable = index.cable_at[("gpu0001", "mlx5_1", 1)]  # rail 1: plane 1's leaf-su01-r1
    assert cable.b.device == "leaf-su01-r1"
    link = fab.by_cable(cable.id)
    assert link.b == ("leaf-su01-r1", None, 1)
    link.b = ("leaf-su01-r0", None, 40)  # a free port of plane 0's leaf
    findings = diff_fabric(index, ibnetdiscover.parse(render(index, fab)))
    assert [f.rule for f in findings] == ["FAB-PLANE"]
    (f,) = findings
    assert f.message.startswith("rail 1 HCA reaches plane 0's leaf leaf-su01-r0 (leaf-su01-r0/40)")
    assert "declared leaf-su01-r1/1" in f.message
    assert "leaf-su01-r1/1" in f.action


def test_a_cable_moved_within_its_plane_stays_a_miswire(tmp_path: Path) -> None:
    checked = load_checked(_env(tmp_path))
    index = checked.index
    fab = from_index(index)
    link = fab.by_cable(index.cable_at[("gpu0001", "mlx5_1", 1)].id)
    link.b = ("leaf-su01-r1", None, 40)
    assert [f.rule for f in diff_fabric(index, ibnetdiscover.parse(render(index, fab)))] == ["FAB-MISWIRED"]
