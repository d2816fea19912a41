"""What the generator returns: the switches, cables, panels and trunks of one plan."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..model.cabling import Cable, PatchPanel, Trunk
from ..model.nodes import Switch
from .design import Design
from .frozen import EMPTY, Frozen

TIERS = ("node_leaf", "leaf_spine", "spine_core")


@dataclass(frozen=True)
class Plan:
    design: Design
    switches: tuple[Switch, ...]
    cables: tuple[Cable, ...]
    tiers: tuple[int, ...]  # per cable: index into TIERS
    patch_panels: tuple[PatchPanel, ...]
    trunks: tuple[Trunk, ...]
    links_on_trunks: int  # individual cross-row cables the trunks replace
    frozen: Frozen = EMPTY  # the as-built fabric this plan kept what it could of

    def switch_counts(self) -> dict[str, int]:
        counts = Counter(s.role for s in self.switches)
        return {role: counts.get(role, 0) for role in ("leaf", "spine", "core")}

    def cable_counts(self) -> dict[str, int]:
        counts = Counter(self.tiers)
        return {name: counts.get(i, 0) for i, name in enumerate(TIERS)}

    def media_counts(self) -> dict[str, int]:
        return dict(sorted(Counter(c.media for c in self.cables).items()))
