"""Slurm's view of the cluster from the model: topology.conf (tree plugin), topology.yaml (Slurm
24.11+: a tree topology, the cluster default, and a block topology) and gres.conf (the GPUs).

Leaves list the compute nodes cabled to them (`Nodes=`); spines and cores list the
switches one tier down they are cabled to (`Switches=`). Switches with no compute node
beneath them are left out: Slurm only schedules compute nodes.

Slurm's tree wants every node under one leaf (it warns "Multiple leaf switches contain
nodes" otherwise). In a rail-optimized fabric a node has one HCA on each rail leaf of
its scalable unit, so leaves that share nodes are written as one Slurm switch, named
after the leaves' common prefix (`leaf-su01-r0`, `leaf-su01-r1` -> `leaf-su01`), with a
comment naming its members; with two or more leaves per rail, leaf j of every rail of a unit
(`leaf-su01-r0-1`, `leaf-su01-r1-1`) -> `leaf-su01-1`.

Blocks (topology/block) are the scalable units: a unit's leaves of every rail, all of them when
the unit is wider than a leaf (leaf-su01-0 and leaf-su01-1 -> block `leaf-su01`, 64 nodes).

Rail planes (`fabric.planes`): topology.conf holds one topology, in which Slurm wants every node
under one leaf switch, so it stays one tree (a unit's leaves of every plane as one Slurm leaf,
under every plane's spines: a switch with several parents is allowed). topology.yaml adds one
tree per plane (`plane0`, `plane1`, ...): that plane's leaves under that plane's spines only,
switch names unique within it; a partition may pick one with Topology=planeN.
"""

from __future__ import annotations

import re
from typing import Any

from ..util.hostlist import compress
from ..util.unionfind import DisjointSets
from .context_opensm import switch_planes
from .fabric import ROLE_TIER, FabricView
from .spec import FileSpec

_SEPARATORS = "-_."


def _common_prefix(names: list[str]) -> str:
    first, last = min(names), max(names)
    size = 0
    while size < min(len(first), len(last)) and first[size] == last[size]:
        size += 1
    return first[:size]


_WIDE = re.compile(r"^(.*)-r\d+-(\d+)$")  # leaf-su01-r3-1: leaf 1 of rail 3 (two or more leaves per rail)


def _group_name(members: list[str], taken: set[str]) -> str:
    wide = {(m.group(1), m.group(2)) for m in map(_WIDE.match, members) if m is not None}
    if len(wide) == 1 and all(_WIDE.match(x) for x in members):  # a unit's j-th leaves of every rail
        ((unit, j),) = wide
        if f"{unit}-{j}" not in taken:
            return f"{unit}-{j}"
    prefix = _common_prefix(members)
    cut = max(prefix.rfind(c) for c in _SEPARATORS)
    name = prefix[:cut].rstrip(_SEPARATORS) if cut > 0 else ""
    if not name or name in taken:
        name = f"{members[0]}-group"
    while name in taken:
        name += "x"
    return name


def leaf_groups(fab: FabricView, compute: set[str], plane: int | None = None
                ) -> tuple[dict[str, str], dict[str, list[str]]]:
    """leaf -> Slurm switch name, and each multi-leaf Slurm switch's member leaves (`plane`: only the
    leaves of that rail plane, a group's name carrying `-pl<P>` where it is not a leaf's own)."""
    planes = switch_planes(fab) if plane is not None else {}
    leaves = [s.name for s in fab.switches_of("leaf") if plane is None or planes.get(s.name) == plane]
    sets: DisjointSets[str] = DisjointSets(leaves)
    first_leaf: dict[str, str] = {}
    for leaf in leaves:
        for node in fab.leaf_nodes[leaf]:
            if node not in compute:
                continue
            if node in first_leaf:
                sets.union(first_leaf[node], leaf)
            else:
                first_leaf[node] = leaf
    taken = {s.name for s in fab.index.inv.switches}
    name_of: dict[str, str] = {}
    groups: dict[str, list[str]] = {}
    for group in sets.groups():
        if len(group) == 1:
            name_of[group[0]] = group[0]
            continue
        name = _group_name(group, taken)
        if plane is not None:
            name = f"{name}-pl{plane}"
        taken.add(name)
        groups[name] = group
        for leaf in group:
            name_of[leaf] = name
    return name_of, groups


def _unit_block(fab: FabricView, members: list[str]) -> str:
    """The scalable unit a Slurm leaf switch's leaves belong to (their common `group`), named after the
    unit's leaves (`leaf-su01-r0-1` -> `leaf-su01`); "" when they are not of one unit."""
    switches = fab.index.switches
    groups = {switches[m].group for m in members if m in switches}
    if len(groups) != 1 or None in groups:
        return ""
    (group,) = groups
    unit = [s.name for s in fab.switches_of("leaf") if s.group == group]
    prefix = _common_prefix(unit)
    cut = max(prefix.rfind(c) for c in _SEPARATORS)
    return prefix[:cut].rstrip(_SEPARATORS) if len(unit) > 1 and cut > 0 else unit[0]


def topology(fab: FabricView, plane: int | None = None) -> dict[str, Any]:
    """topology.conf's tree; `plane`: the tree of that rail plane alone (its leaves and spines)."""
    compute = {n.name for n in fab.nodes_of("compute")}
    name_of, groups = leaf_groups(fab, compute, plane)
    planes = switch_planes(fab) if plane is not None else {}
    below: dict[str, list[str]] = {}  # Slurm switch -> its children that lead to compute nodes
    lines: list[dict[str, Any]] = []
    for leaf in fab.switches_of("leaf"):
        name = name_of.get(leaf.name)
        if name is None or name in below:
            continue
        leaves = groups.get(name, [name])
        nodes = list(dict.fromkeys(n for member in leaves for n in fab.leaf_nodes[member] if n in compute))
        if nodes:
            below[name] = nodes
            lines.append({"switch": name, "kind": "Nodes", "members": compress(nodes), "size": len(nodes),
                          "comment": " ".join(groups[name]) if name in groups else "", "nodes": nodes,
                          "block": _unit_block(fab, leaves) or name})
    children: dict[str, list[str]] = {s.name: [] for s in fab.index.inv.switches}
    for sw in sorted(fab.index.inv.switches, key=lambda s: ROLE_TIER[s.role]):
        for up in fab.uplinks[sw.name]:
            child = name_of.get(sw.name, sw.name)
            if child not in children[up]:
                children[up].append(child)
    for role in ("spine", "core"):
        for sw in fab.switches_of(role):
            if plane is not None and planes.get(sw.name) != plane:
                continue
            kids = [c for c in children[sw.name] if c in below]
            if kids:
                below[sw.name] = kids
                lines.append({"switch": sw.name, "kind": "Switches", "members": compress(kids), "size": len(kids),
                              "comment": ""})
    return {"switches": lines}


def _yaml_switches(tree: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"switch": s["switch"], "key": "nodes" if s["kind"] == "Nodes" else "children", "members": s["members"],
         "comment": s["comment"]}
        for s in tree["switches"]
    ]


def topology_yaml(tree: dict[str, Any], plane_trees: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """topology.yaml's topologies from the tree of topology.conf.

    `tree` (cluster_default): the same switches, `children` for spines and cores, `nodes` for
    leaves. `block` (topology/block): one block per scalable unit (a line's `block`; else per Slurm
    leaf switch): a unit's rail leaves count as one, and so do its leaves of one rail when the unit
    is wider than a leaf; the base block size is the largest power of two that every block can
    hold, and each larger power of two up to the largest block is a higher-level size (Slurm
    requires successive sizes to be powers of two). `plane_trees`: rail planes, one tree topology
    per plane (`plane<P>`).
    """
    switches = _yaml_switches(tree)
    merged: dict[str, dict[str, Any]] = {}  # block -> its lines' nodes (or hostlists, for bare trees) and size
    for s in tree["switches"]:
        if s["kind"] != "Nodes":
            continue
        b = merged.setdefault(s.get("block", s["switch"]), {"nodes": [], "size": 0})
        b["nodes"] += s.get("nodes", [s["members"]])
        b["size"] += s["size"]
    blocks = [{"block": name, "nodes": b["nodes"][0] if len(b["nodes"]) == 1 else compress(b["nodes"]),
               "size": b["size"]} for name, b in merged.items()]
    sizes: list[int] = []
    if blocks:
        base = 1 << (min(b["size"] for b in blocks).bit_length() - 1)
        largest = max(b["size"] for b in blocks)
        sizes = [base]
        while sizes[-1] * 2 <= largest:
            sizes.append(sizes[-1] * 2)
    planes = [{"topology": f"plane{t['plane']}", "switches": _yaml_switches(t)} for t in plane_trees or []]
    return {"switches": switches, "blocks": blocks, "block_sizes": sizes, "planes": planes}


def plane_trees(fab: FabricView) -> list[dict[str, Any]]:
    """Rail planes: each plane's own tree (`topology(fab, plane)`, with `plane`); [] without planes."""
    out = []
    for plane in sorted(set(switch_planes(fab).values())):
        tree = topology(fab, plane)
        if tree["switches"]:
            out.append({**tree, "plane": plane})
    return out


def gres(fab: FabricView) -> dict[str, Any]:
    """gres.conf: one line per group of compute nodes with the same GPUs (model, count)."""
    groups: dict[tuple[str, int], list[str]] = {}
    for node in fab.nodes_of("compute"):
        gpus = fab.index.hardware[node.name].gpus
        if gpus is not None and gpus.count > 0:
            groups.setdefault((gpus.model, gpus.count), []).append(node.name)
    lines = []
    for (model, count), nodes in sorted(groups.items(), key=lambda kv: compress(kv[1])):
        files = "/dev/nvidia0" if count == 1 else f"/dev/nvidia[0-{count - 1}]"
        lines.append({"nodes": compress(nodes), "type": gres_type(model), "files": files, "count": count,
                      "model": model})
    return {"lines": lines}


def gres_type(model: str) -> str:
    """A GPU model as a GRES type name: `H100-SXM` -> `h100_sxm` (Slurm's types are plain words)."""
    return "".join(c if c.isalnum() else "_" for c in model.lower())


def slurm_files(fab: FabricView) -> list[FileSpec]:
    ctx = topology(fab)
    notes: tuple[str, ...] = ()
    if not ctx["switches"]:
        notes = ("slurm/topology.conf: no compute node is cabled to a switch",)
    out = [FileSpec("slurm/topology.conf", "slurm/topology.conf.j2", ctx, notes=notes),
           FileSpec("slurm/topology.yaml", "slurm/topology.yaml.j2", topology_yaml(ctx, plane_trees(fab)))]
    gres_ctx = gres(fab)
    if gres_ctx["lines"]:
        out.append(FileSpec("slurm/gres.conf", "slurm/gres.conf.j2", gres_ctx))
    return out
