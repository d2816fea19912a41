"""validate on a rail-plane fabric: a cable moved into another plane is its own finding (FAB-PLANE)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from _plan_util import ROOT

from clusterforge.api import load_checked
from clusterforge.collect.plan import default_targets
from clusterforge.collect.store import Observations
from clusterforge.model.index import Index
from clusterforge.parse import ibnetdiscover
from clusterforge.sim.ibnetdiscover import SimFabric, from_index, render
from clusterforge.validate.fabric import diff_fabric
from clusterforge.validate.run import validate

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


def _per_plane(index: Index, fab: SimFabric) -> dict[str, str]:
    """The ibnetdiscover text each plane's discovery prints (a link belongs to its switch end's plane)."""
    plane_of = {s.name: (s.rail if s.role == "leaf" else s.group) for s in index.inv.switches}
    out: dict[str, str] = {}
    for plane in (0, 1):
        links = [ln for ln in fab.links if plane_of.get(ln.b[0], plane_of.get(ln.a[0])) == plane]
        out[f"ibnetdiscover-plane{plane}"] = render(index, dataclasses.replace(fab, links=links))
    return out


def test_discovery_per_plane(tmp_path: Path) -> None:
    index = load_checked(_env(tmp_path)).index
    # the SM node runs discovery once per plane, through its port in that plane
    _, target = default_targets(index, {n: "192.0.2.1" for n in index.nodes})
    assert target is not None and target.host == "sm01"
    assert target.commands["ibnetdiscover-plane0"] == ("ibnetdiscover", "-C", "mlx5_0", "-P", "1")
    assert target.commands["ibnetdiscover-plane1"] == ("ibnetdiscover", "-C", "mlx5_1", "-P", "1")
    assert "ibnetdiscover" not in target.commands
    fab = from_index(index)
    texts = _per_plane(index, fab)
    assert "spine-pl02" not in texts["ibnetdiscover-plane0"] and "spine-pl01" not in texts["ibnetdiscover-plane1"]
    report = validate(index, Observations(fabric=texts), fabric_only=True)
    assert report.findings == [] and report.fabric_checked
    # one plane's output alone: that plane is one finding of its own, not its switches each missing
    half = validate(index, Observations(fabric={"ibnetdiscover-plane0": texts["ibnetdiscover-plane0"]}),
                    fabric_only=True)
    assert [(f.rule, f.subject) for f in half.findings] == [("FAB-PLANE-NO-DATA", "plane 1")]
    assert half.findings[0].message.startswith("plane 1 not collected: no host with a port in it answered")
    assert "leaf-su01-r1" in half.findings[0].message and half.fabric_checked
    # ... and plane 0 is still checked: a fault there is reported beside it
    broken = from_index(index)
    broken.links = [ln for ln in broken.links if ln.cable != index.cable_at[("gpu0001", "mlx5_0", 1)].id]
    plane0 = _per_plane(index, broken)["ibnetdiscover-plane0"]
    one = validate(index, Observations(fabric={"ibnetdiscover-plane0": plane0}), fabric_only=True)
    assert sorted(f.rule for f in one.findings) == ["FAB-MISSING", "FAB-PLANE-NO-DATA"]
    # a plane whose output does not parse: its PARSE finding, the other plane checked, nothing else
    garbled = validate(index, Observations(fabric={**texts, "ibnetdiscover-plane1": "Switch 36 garbage\n"}),
                       fabric_only=True)
    assert [f.rule for f in garbled.findings] == ["PARSE"]
    # a cable moved into the other plane shows up in that plane's discovery as FAB-PLANE
    fab.by_cable(index.cable_at[("gpu0001", "mlx5_1", 1)].id).b = ("leaf-su01-r0", None, 40)
    moved = validate(index, Observations(fabric=_per_plane(index, fab)), fabric_only=True)
    assert [f.rule for f in moved.findings] == ["FAB-PLANE"]
