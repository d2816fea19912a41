"""Slurm topology and the ibsim net file for wide units and rail planes."""

from __future__ import annotations

from clusterforge.plan.sizing import SizeRequest, size
from clusterforge.render import render_environment
from clusterforge.render.context_slurm import topology
from clusterforge.render.fabric import FabricView


def test_two_leaves_per_rail_make_two_slurm_leaf_switches_per_unit() -> None:
    # 128 nodes x 2 rails, units of 64 on 64-port leaves: leaf j of each rail holds nodes 32j+1..32j+32 of
    # its unit, so Slurm sees leaf-su01-0 (node 1-32) and leaf-su01-1 (33-64), under every one of the 4 spines
    # (8 leaves x 32 uplinks over 4 spines of 64 ports)
    p = size(SizeRequest(nodes=128, ports_per_node=2, radix=64, su_size=64))
    lines = {s["switch"]: s for s in topology(FabricView(p.index))["switches"]}
    assert lines["leaf-su01-0"]["members"] == "node[00001-00032]"
    assert lines["leaf-su01-1"]["members"] == "node[00033-00064]"
    assert lines["leaf-su02-1"]["comment"] == "leaf-su02-r0-1 leaf-su02-r1-1"
    spines = [s for s in lines.values() if s["kind"] == "Switches"]
    assert len(spines) == 4 and {s["members"] for s in spines} == {"leaf-su01-[0-1],leaf-su02-[0-1]"}


def test_rail_planes_one_tree_and_every_plane_in_ibsim() -> None:
    p = size(SizeRequest(nodes=64, ports_per_node=4, radix=64, su_size=16, planes="rail"))
    lines = topology(FabricView(p.index))["switches"]
    spines = [s for s in lines if s["kind"] == "Switches"]
    # every plane's spines sit above the same 4 unit groups: one tree for the scheduler
    assert {s["switch"][:len("spine-pl01")] for s in spines} == {f"spine-pl0{i}" for i in range(1, 5)}
    assert {s["members"] for s in spines} == {"leaf-su[01-04]"}
    net = render_environment(p.index, "planes")["fabric/ibsim.net"]
    # 16 leaves (4 units x 4 rails) and 4 planes x 2 spines, every plane simulated
    switches = [ln for ln in net.splitlines() if ln.startswith("Switch")]
    assert len(switches) == 24
    assert {f"spine-pl{plane:02d}-{s:02d}" for plane in range(1, 5) for s in (1, 2)} == {
        ln.split('# "')[1].split('"')[0] for ln in switches if '# "spine' in ln}
