"""The fabric as a graph of tiers, read from any inventory's switches and cables.

Works on generated and hand-declared plans alike: roles come from `Switch.role`, host
ports are HCA ports, and each cable is sorted into the tier pair it joins. Cables whose
ends are unknown are skipped (the inventory checks report those).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ..model.index import Index
from ..util.unionfind import DisjointSets

LEVEL = {"node": 0, "leaf": 1, "spine": 2, "core": 3}


@dataclass
class FabricGraph:
    roles: dict[str, str] = field(default_factory=dict)  # switch -> leaf | spine | core
    radix: dict[str, int] = field(default_factory=dict)
    used: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    # (lower, upper) -> number of links, for switch-to-switch tier pairs
    links: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    down_gbps: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    up_gbps: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    host_leaf: list[tuple[str, str, int, str]] = field(default_factory=list)  # node, hca, port, switch
    tier_gbps: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    cables: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # by tier pair name
    odd: list[tuple[str, str]] = field(default_factory=list)  # (cable id, why)

    def neighbours(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {name: set() for name in self.roles}
        for lower, upper in self.links:
            out[lower].add(upper)
            out[upper].add(lower)
        return out

    def of_role(self, role: str) -> list[str]:
        return [name for name, r in self.roles.items() if r == role]


def build_graph(index: Index) -> FabricGraph:
    g = FabricGraph()
    cat = index.cat
    for sw in index.inv.switches:
        g.roles[sw.name] = sw.role
        g.radix[sw.name] = index.switch_port_count(sw) or 0
    gbps = {name: float(info.gbps) for name, info in cat.rates.items()}
    for cable, link_rate in zip(index.inv.cables, index.cable_rates, strict=True):
        ends = []
        for ref in (cable.a, cable.b):
            if ref.hca is not None:
                ends.append(("node", ref.device, ref))
            elif ref.device in g.roles:
                ends.append((g.roles[ref.device], ref.device, ref))
            else:
                ends = []
                break
        if len(ends) != 2:
            continue
        ends.sort(key=lambda e: LEVEL[e[0]])
        (la, da, refa), (lb, db, refb) = ends
        for level, dev, ref in ((la, da, refa), (lb, db, refb)):
            if level != "node":
                g.used[dev].add(ref.port)
        rate = gbps[link_rate] if link_rate else 0.0  # the slower end's, as every layer reads it
        name = f"{la}_{lb}"
        g.cables[name] += 1
        if LEVEL[lb] != LEVEL[la] + 1:
            g.odd.append((cable.id, f"joins a {la} to a {lb}"))
            continue
        g.tier_gbps[name] += rate
        g.down_gbps[db] += rate
        if la == "node":
            g.host_leaf.append((da, refa.hca or "", refa.port, db))
        else:
            g.up_gbps[da] += rate
            g.links[(da, db)] += 1
    return g


def components(pairs: list[tuple[str, str]]) -> list[list[str]]:
    """Connected components (each sorted) of the graph given by its edges."""
    sets: DisjointSets[str] = DisjointSets()
    for a, b in pairs:
        sets.union(a, b)
    return sorted((sorted(v) for v in sets.groups()), key=lambda v: v[0])


def worst_hops(g: FabricGraph) -> tuple[int | None, list[str]]:
    """(most switches a packet crosses between two hosts, leaves it cannot reach).

    Leaves with the same neighbours have the same distances to everything else, so one
    breadth-first search per distinct neighbour set is exact.
    """
    leaves = sorted({leaf for *_, leaf in g.host_leaf})
    if len(leaves) <= 1:
        return (1 if leaves else None), []
    adj = g.neighbours()
    seen_sets: set[frozenset[str]] = set()
    worst = 0
    for leaf in leaves:
        key = frozenset(adj.get(leaf, ()))
        if key in seen_sets:
            continue
        seen_sets.add(key)
        dist = {leaf: 0}
        frontier = [leaf]
        while frontier:
            nxt = []
            for x in frontier:
                for y in adj.get(x, ()):
                    if y not in dist:
                        dist[y] = dist[x] + 1
                        nxt.append(y)
            frontier = nxt
        missing = [other for other in leaves if other not in dist]
        if missing:
            return None, missing
        worst = max(worst, max(dist[other] for other in leaves))
    return worst + 1, []
