"""Which leaf port each node's HCA ports get: slots in scalable units, ports on infrastructure leaves.

**Scalable units.** A node takes a *slot* (SU, k): rail-optimized, port k+1 of the leaf of each
of its rails; fat-tree, slot k x rails + rail of the SU's leaves in order. Without a frozen
fabric and HA groups the k-th fabric node takes slot (k // su_size, k % su_size): list order.
With them, in this order:

1. a node keeps the slot its frozen cables show (`cabling.generated.yaml`) when that slot is
   still in the design, no earlier node took it and no HA partner of it (`opensm.sm_nodes`,
   `lustre[].failover_pairs`) is already on one of the leaves it would use;
2. the other nodes, in list order, take their list-order slot when it is free and keeps them
   apart from their partners; else the lowest free slot of that SU that does; else of the
   following units in use, then of the earlier ones; else of a new unit after the last. In
   those searches slots that a later node takes in list order come last, so that a node
   moved away from its partners does not push every later node along.

**Infrastructure leaves** (`fabric.infra_roles`): port j of the k-th infrastructure node goes to
leaf (k + j) mod leaves, or the next leaf with a free port, on the lowest free port; a node's
ports prefer leaves it does not use yet and leaves none of its HA partners uses. Frozen ports
are kept first, on the same terms.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from .design import Design
from .endpoints import FabricNode
from .errors import PlanError
from .frozen import EMPTY, Frozen

_LEAF = re.compile(r"^leaf-su(\d+)-(r?)(\d+)(?:-(\d+))?$")
_INFRA = re.compile(r"^leaf-infra-(\d+)$")
Slot = tuple[int, int]


class Units:
    """Slot occupancy and the HA members on each (SU, leaf)."""

    def __init__(self, d: Design, partners: Mapping[str, frozenset[str]]) -> None:
        self.size = d.su_size
        self.down = d.leaf_down
        self.per_rail = d.leaves_per_rail
        self.rails = d.rails
        self.rail_opt = d.kind == "rail-optimized"
        self.partners = partners
        self.taken: dict[int, bytearray] = {}
        self.ha_on: dict[tuple[int, int], set[str]] = {}

    def leaf_port(self, k: int, rail: int) -> tuple[int, int]:
        """(leaf index in the SU, leaf port) of slot k on `rail`: rail-optimized, leaf
        rail x leaves_per_rail + k // leaf_down (one leaf per rail: the rail)."""
        if self.rail_opt:
            if self.per_rail == 1:
                return rail, k + 1
            return rail * self.per_rail + k // self.down, k % self.down + 1
        s = k * self.rails + rail
        return s // self.down, s % self.down + 1

    def slot_of(self, leaf: int, port: int) -> tuple[int, int] | None:
        """(k, rail) of a leaf port, or None when it is not a node port of this design."""
        if not 1 <= port <= self.down:
            return None
        if self.rail_opt:
            if leaf >= self.rails * self.per_rail:
                return None
            return (leaf % self.per_rail) * self.down + port - 1, leaf // self.per_rail
        s = leaf * self.down + port - 1
        return s // self.rails, s % self.rails

    def leaves(self, node: FabricNode, k: int) -> set[int]:
        return {self.leaf_port(k, rail)[0] for rail, ep in enumerate(node.ports) if ep is not None}

    def fits(self, node: FabricNode, su: int, k: int) -> bool:
        row = self.taken.get(su)
        if row is not None and row[k]:
            return False
        others = self.partners.get(node.name)
        if not others:
            return True
        return not any(others & self.ha_on.get((su, leaf), set()) for leaf in self.leaves(node, k))

    def take(self, node: FabricNode, su: int, k: int) -> None:
        row = self.taken.get(su)
        if row is None:
            row = self.taken[su] = bytearray(self.size)
        row[k] = 1
        if node.name in self.partners:
            for leaf in self.leaves(node, k):
                self.ha_on.setdefault((su, leaf), set()).add(node.name)

    def first_fit(self, node: FabricNode, su: int, prefer: int | None, skip: set[Slot] | None = None) -> int | None:
        if prefer is not None and self.fits(node, su, prefer):
            return prefer
        return next((k for k in range(self.size) if (skip is None or (su, k) not in skip) and self.fits(node, su, k)),
                    None)


def assign_slots(nodes: list[FabricNode], d: Design, frozen: Frozen = EMPTY,
                 partners: Mapping[str, frozenset[str]] | None = None) -> list[Slot]:
    """The (SU, k) slot of every node on the rail leaves, in node order."""
    size = d.su_size
    partners = partners or {}
    if not frozen and not any(n.name in partners for n in nodes):
        return [(i // size, i % size) for i in range(len(nodes))]
    units = Units(d, partners)
    out: list[Slot | None] = [None] * len(nodes)
    if frozen:
        for i, node in enumerate(nodes):
            kept = _frozen_slot(node, units, frozen)
            if kept is not None and units.fits(node, *kept):
                units.take(node, *kept)
                out[i] = kept
    top = max(math.ceil(len(nodes) / size), max((s for s, _ in filter(None, out)), default=-1) + 1)
    # list-order slots that nodes still to be placed will ask for: a node moved for its HA partners takes
    # one of them only when nothing else is free, so that it does not push every later node along
    wanted = {divmod(i, size) for i in range(len(nodes)) if out[i] is None}
    for i, node in enumerate(nodes):
        if out[i] is not None:
            continue
        want, k_want = divmod(i, size)
        wanted.discard((want, k_want))
        want = min(want, top)
        order = [*range(want, top), *range(min(want, top) - 1, -1, -1)]
        slot: Slot | None = None
        for skip in (wanted, None):
            for su in order:
                k = units.first_fit(node, su, k_want if su == want else None, skip)
                if k is not None:
                    slot = (su, k)
                    break
            if slot is not None:
                break
        while slot is None:  # a new unit after the last one
            k = units.first_fit(node, top, None)
            if k is not None:
                slot = (top, k)
            top += 1
        top = max(top, slot[0] + 1)
        units.take(node, *slot)
        out[i] = slot
    return [s for s in out if s is not None]


def _frozen_slot(node: FabricNode, units: Units, frozen: Frozen) -> Slot | None:
    """The slot the node's frozen cables show (the first port that names one of this design)."""
    for rail, ep in enumerate(node.ports):
        if ep is None:
            continue
        hit = frozen.host_cable.get((node.name, ep.hca, ep.port))
        if hit is None:
            continue
        m = _LEAF.match(hit[1])
        if m is None or (m.group(2) == "r") != units.rail_opt or (m.group(4) is not None) != (units.per_rail > 1
                                                                                               and units.rail_opt):
            continue
        leaf = int(m.group(3)) * units.per_rail + int(m.group(4) or 0) if units.rail_opt else int(m.group(3))
        at = units.slot_of(leaf, hit[2])
        if at is not None and at[1] == rail:
            return int(m.group(1)) - 1, at[0]
    return None


def infra_spread(infra: list[FabricNode], leaves: int, down: int, frozen: Frozen = EMPTY,
                 partners: Mapping[str, frozenset[str]] | None = None) -> list[list[tuple[int, int]]]:
    """(leaf number, port) of every port of every infrastructure node, in node order (module doc)."""
    partners = partners or {}
    used = [bytearray(down + 1) for _ in range(leaves)]  # index 0 unused
    count = [0] * leaves
    ha_on: list[set[str]] = [set() for _ in range(leaves)]
    out: list[list[tuple[int, int] | None]] = [[None] * len(n.ports) for n in infra]

    def take(k: int, j: int, leaf: int, port: int) -> None:
        used[leaf][port] = 1
        count[leaf] += 1
        out[k][j] = (leaf, port)
        if infra[k].name in partners:
            ha_on[leaf].add(infra[k].name)

    if frozen:
        for k, node in enumerate(infra):
            others = partners.get(node.name, frozenset())
            for j, ep in enumerate(node.ports):
                hit = frozen.host_cable.get((node.name, ep.hca, ep.port)) if ep is not None else None
                m = _INFRA.match(hit[1]) if hit is not None else None
                if hit is None or m is None:
                    continue
                leaf, port = int(m.group(1)) - 1, hit[2]
                if leaf < leaves and 1 <= port <= down and not used[leaf][port] and not others & ha_on[leaf]:
                    take(k, j, leaf, port)
    for k, node in enumerate(infra):
        others = partners.get(node.name, frozenset())
        for j in range(len(node.ports)):
            if out[k][j] is not None:
                continue
            free = [x for x in ((k + j + step) % leaves for step in range(leaves)) if count[x] < down]
            if not free:
                raise PlanError(f"node {node.name}: no free port left on the {leaves} infrastructure leaves",
                                [f"infra_leaves: {leaves + 1}"])
            mine = {p[0] for p in out[k] if p is not None}
            leaf = next((x for x in free if x not in mine and not others & ha_on[x]),
                        next((x for x in free if x not in mine), free[0]))
            take(k, j, leaf, used[leaf].index(0, 1))
    return [[p for p in ports if p is not None] for ports in out]
