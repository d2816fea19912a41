"""Slurm topology and the ibsim net file for wide units and rail planes."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import yaml

from clusterforge.plan.sizing import Planned, SizeRequest, size
from clusterforge.render import render_environment
from clusterforge.render.context_slurm import topology
from clusterforge.render.fabric import FabricView
from clusterforge.util.hostlist import expand


def planes(req: SizeRequest) -> Planned:
    """A small rail-plane fabric as an inventory that declares its planes gets it (`plan size` would make
    these one fabric: their leaves fit one layer of spines)."""
    return size(req, as_declared=True)


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
    p = planes(SizeRequest(nodes=64, ports_per_node=4, radix=64, su_size=16, planes="rail"))
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


# -- what Slurm's topology/tree and topology.yaml loaders accept -------------------------------------------
# A port of the checks of Slurm's switch_record_validate (src/plugins/topology/tree/switch_record.c): fatal
# errors (a switch defined twice, a child that is no switch or itself, not a tree within 20 levels) raise;
# the warnings (nodes under several leaf switches, nodes under none, no switch reaching every node) are
# returned, so a test can ask for none.


def slurm_tree_problems(switches: list[tuple[str, str, str]], nodes: set[str]) -> list[str]:
    """`switches`: (name, "Nodes"|"Switches", hostlist) as topology.conf / a topology.yaml tree lists them."""
    names = [s[0] for s in switches]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, f"fatal: Switch ({sorted(dup)[0]}) has already been defined"
    below: dict[str, set[str]] = {}
    warnings: list[str] = []
    seen: set[str] = set()
    multi: set[str] = set()
    for name, kind, members in switches:
        if kind == "Nodes":
            mine = set(expand(members))
            assert mine <= nodes, f"invalid hostnames in {name}: {sorted(mine - nodes)[:3]}"
            multi |= seen & mine
            seen |= mine
            below[name] = mine
    todo = {name: expand(members) for name, kind, members in switches if kind == "Switches"}
    for _ in range(21):
        for name, kids in list(todo.items()):
            for kid in kids:
                assert kid in names and kid != name, f"fatal: Switch configuration {name} has invalid child ({kid})"
            if all(k in below for k in kids):
                below[name] = set().union(*(below[k] for k in kids))
                del todo[name]
        if not todo:
            break
    assert not todo, "fatal: Switch configuration is not a tree"
    if nodes - seen:
        warnings.append(f"switches lack access to {len(nodes - seen)} nodes")
    if multi:
        warnings.append(f"Multiple leaf switches contain nodes: {sorted(multi)[:3]}")
    if not any(b == nodes for b in below.values()):
        warnings.append("no switch can reach all nodes through its descendants")
    return warnings


def conf_switches(text: str) -> list[tuple[str, str, str]]:
    out = []
    for line in text.splitlines():
        if line.startswith("SwitchName="):
            name, kids = line.split()
            kind, members = kids.split("=", 1)
            out.append((name.split("=", 1)[1], kind, members))
    return out


def yaml_topologies(text: str) -> dict[str, dict[str, Any]]:
    """topology.yaml(5): a list of topologies, `topology` (a unique name) first, exactly one of block / flat /
    tree each; the first cluster_default: true is the default."""
    data = yaml.safe_load(text)
    assert isinstance(data, list)
    out: dict[str, dict[str, Any]] = {}
    for topo in data:
        assert next(iter(topo)) == "topology" and topo["topology"] not in out
        assert len({"block", "flat", "tree"} & set(topo)) == 1
        out[topo["topology"]] = topo
    assert next(t for t in out.values() if t.get("cluster_default"))["topology"] == "tree"
    return out


def yaml_tree(topo: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(s["switch"], "Nodes" if "nodes" in s else "Switches", s.get("nodes", s.get("children")))
            for s in topo["tree"]["switches"]]


def check_blocks(topo: dict[str, Any], nodes: set[str]) -> list[int]:
    """topology/block: successive block sizes are powers of two apart from a base no block is smaller than;
    every node in one block. Returns the blocks' sizes."""
    sizes = topo["block"]["block_sizes"]
    assert all(b == a * 2 for a, b in itertools.pairwise(sizes))
    got = [expand(b["nodes"]) for b in topo["block"]["blocks"]]
    flat = [n for b in got for n in b]
    assert sorted(flat) == sorted(nodes) and len(flat) == len(set(flat))
    assert min(map(len, got)) >= sizes[0]
    return [len(b) for b in got]


def _slurm(p: Any) -> tuple[str, dict[str, dict[str, Any]], set[str], FabricView]:
    files = render_environment(p.index, "planes")
    nodes = {n.name for n in p.index.inv.nodes if n.role == "compute"}
    return files["slurm/topology.conf"], yaml_topologies(files["slurm/topology.yaml"]), nodes, FabricView(p.index)


def test_rail_planes_topology_yaml_one_tree_per_plane_slurm_accepts() -> None:
    # 64 nodes x 4 rails, units of 16, one plane per rail: plane P = the 4 units' rail-P leaves under spine-pl0<P+1>-*
    p = planes(SizeRequest(nodes=64, ports_per_node=4, radix=64, su_size=16, planes="rail"))
    conf, topos, nodes, fab = _slurm(p)
    assert slurm_tree_problems(conf_switches(conf), nodes) == []
    assert slurm_tree_problems(yaml_tree(topos["tree"]), nodes) == []
    assert sorted(t for t in topos if t.startswith("plane")) == ["plane0", "plane1", "plane2", "plane3"]
    for plane in range(4):
        tree = yaml_tree(topos[f"plane{plane}"])
        assert slurm_tree_problems(tree, nodes) == []  # every node under exactly one leaf of this plane
        leaves = {name for name, kind, _ in tree if kind == "Nodes"}
        spines = {name for name, kind, _ in tree if kind == "Switches"}
        assert leaves == {f"leaf-su{u:02d}-r{plane}" for u in range(1, 5)}
        assert spines == {s.name for s in fab.switches_of("spine") if s.group == plane}
        assert all(members == f"leaf-su[01-04]-r{plane}" or set(expand(members)) == leaves
                   for _, kind, members in tree if kind == "Switches")
    assert check_blocks(topos["block"], nodes) == [16, 16, 16, 16]


def test_wide_units_in_rail_planes_blocks_are_units_and_planes_keep_their_leaves() -> None:
    # 128 nodes x 2 rails, units of 64 on 64-port leaves (2 leaves per rail), a plane per rail
    p = planes(SizeRequest(nodes=128, ports_per_node=2, radix=64, su_size=64, planes="rail"))
    conf, topos, nodes, fab = _slurm(p)
    assert slurm_tree_problems(conf_switches(conf), nodes) == []
    blocks = topos["block"]["block"]
    assert [b["block"] for b in blocks["blocks"]] == ["leaf-su01", "leaf-su02"]  # a block is the whole unit
    assert blocks["blocks"][0]["nodes"] == "node[00001-00064]" and blocks["block_sizes"] == [64]
    assert check_blocks(topos["block"], nodes) == [64, 64]
    for plane in (0, 1):
        tree = yaml_tree(topos[f"plane{plane}"])
        assert slurm_tree_problems(tree, nodes) == []
        leaves = {name for name, kind, _ in tree if kind == "Nodes"}
        assert leaves == {f"leaf-su{u:02d}-r{plane}-{j}" for u in (1, 2) for j in (0, 1)}
        assert {name for name, kind, _ in tree if kind == "Switches"} == {
            s.name for s in fab.switches_of("spine") if s.group == plane}
    # switch names are unique within each plane's tree and no plane's tree names another plane's switch
    assert not {n for n, _, _ in yaml_tree(topos["plane0"])} & {n for n, _, _ in yaml_tree(topos["plane1"])}


def test_two_rails_per_plane_group_names_carry_the_plane() -> None:
    # 4 rails, 2 per plane: a unit's two rail leaves of a plane are one Slurm leaf, leaf-su01-pl0
    p = planes(SizeRequest(nodes=32, ports_per_node=4, radix=64, su_size=16, planes=2))
    conf, topos, nodes, _ = _slurm(p)
    assert slurm_tree_problems(conf_switches(conf), nodes) == []
    for plane in (0, 1):
        tree = yaml_tree(topos[f"plane{plane}"])
        assert slurm_tree_problems(tree, nodes) == []
        assert {n for n, kind, _ in tree if kind == "Nodes"} == {f"leaf-su0{u}-pl{plane}" for u in (1, 2)}


def test_the_checker_catches_what_slurm_refuses_or_warns_about() -> None:
    nodes = {"n1", "n2"}
    assert slurm_tree_problems([("a", "Nodes", "n1"), ("b", "Nodes", "n[1-2]"), ("s", "Switches", "a,b")], nodes) == [
        "Multiple leaf switches contain nodes: ['n1']"]
    assert "switches lack access to 1 nodes" in slurm_tree_problems([("a", "Nodes", "n1")], nodes)
    for bad in ([("a", "Nodes", "n1"), ("a", "Nodes", "n2")], [("s", "Switches", "x")],
                [("s", "Switches", "t"), ("t", "Switches", "s")]):
        with pytest.raises(AssertionError, match="fatal"):
            slurm_tree_problems(bad, nodes)
