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
(`leaf-su01-r0-1`, `leaf-su01-r1-1`) -> `leaf-su01-1`. Rail planes need nothing else: every
plane's spines list the same unit groups, so the one tree (and the blocks) hold.
"""

from __future__ import annotations

import re
from typing import Any

from ..unionfind import DisjointSets
from .fabric import ROLE_TIER, FabricView
from .hostlist import compress
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


def leaf_groups(fab: FabricView, compute: set[str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """leaf -> Slurm switch name, and each multi-leaf Slurm switch's member leaves."""
    leaves = [s.name for s in fab.switches_of("leaf")]
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
        taken.add(name)
        groups[name] = group
        for leaf in group:
            name_of[leaf] = name
    return name_of, groups


def topology(fab: FabricView) -> dict[str, Any]:
    compute = {n.name for n in fab.nodes_of("compute")}
    name_of, groups = leaf_groups(fab, compute)
    below: dict[str, list[str]] = {}  # Slurm switch -> its children that lead to compute nodes
    lines: list[dict[str, Any]] = []
    for leaf in fab.switches_of("leaf"):
        name = name_of[leaf.name]
        if name in below:
            continue
        nodes = list(dict.fromkeys(
            n for member in groups.get(name, [name]) for n in fab.leaf_nodes[member] if n in compute
        ))
        if nodes:
            below[name] = nodes
            lines.append({"switch": name, "kind": "Nodes", "members": compress(nodes), "size": len(nodes),
                          "comment": " ".join(groups[name]) if name in groups else ""})
    children: dict[str, list[str]] = {s.name: [] for s in fab.index.inv.switches}
    for sw in sorted(fab.index.inv.switches, key=lambda s: ROLE_TIER[s.role]):
        for up in fab.uplinks[sw.name]:
            child = name_of.get(sw.name, sw.name)
            if child not in children[up]:
                children[up].append(child)
    for role in ("spine", "core"):
        for sw in fab.switches_of(role):
            kids = [c for c in children[sw.name] if c in below]
            if kids:
                below[sw.name] = kids
                lines.append({"switch": sw.name, "kind": "Switches", "members": compress(kids), "size": len(kids),
                              "comment": ""})
    return {"switches": lines}


def topology_yaml(tree: dict[str, Any]) -> dict[str, Any]:
    """topology.yaml's two topologies from the tree of topology.conf.

    `tree` (cluster_default): the same switches, `children` for spines and cores, `nodes` for
    leaves. `block` (topology/block): one block per Slurm leaf switch, i.e. the nodes that share
    a leaf (a scalable unit's rail leaves count as one); the base block size is the largest power
    of two that every block can hold, and each larger power of two up to the largest block is a
    higher-level size (Slurm requires successive sizes to be powers of two).
    """
    switches = [
        {"switch": s["switch"], "key": "nodes" if s["kind"] == "Nodes" else "children", "members": s["members"],
         "comment": s["comment"]}
        for s in tree["switches"]
    ]
    blocks = [{"block": s["switch"], "nodes": s["members"], "size": s["size"]}
              for s in tree["switches"] if s["kind"] == "Nodes"]
    sizes: list[int] = []
    if blocks:
        base = 1 << (min(b["size"] for b in blocks).bit_length() - 1)
        largest = max(b["size"] for b in blocks)
        sizes = [base]
        while sizes[-1] * 2 <= largest:
            sizes.append(sizes[-1] * 2)
    return {"switches": switches, "blocks": blocks, "block_sizes": sizes}


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
           FileSpec("slurm/topology.yaml", "slurm/topology.yaml.j2", topology_yaml(ctx))]
    gres_ctx = gres(fab)
    if gres_ctx["lines"]:
        out.append(FileSpec("slurm/gres.conf", "slurm/gres.conf.j2", gres_ctx))
    return out
