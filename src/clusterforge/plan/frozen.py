"""The frozen as-built fabric (`cabling.generated.yaml`): the constraints a re-plan keeps.

`plan --write` writes the plan; once written it is what the technicians built. A later plan
(a new spec, nodes added or retired) starts from the ideal design for the new spec and then
keeps every frozen element that is still valid in it (generate.py does the keeping):

* a switch keeps its rack and unit when the new design has a switch of that name, model,
  role and split, and no node now sits in its units;
* a node keeps its leaf ports (its scalable unit and slot) when the new design still has that
  slot on the leaf of the port's rail, and no HA partner of it is already on that leaf;
* the spine count (and cores per plane) stays when it still fits; after an oversubscription
  change the design takes the spines and links per leaf and spine (design.py `_replan_count`)
  that are both no fewer, or both no more, than the frozen ones, so the change only adds or
  only removes links and spines;
* a switch-to-switch link keeps its two ports when the new design still links those two
  switches (up to as many links as it wants between them) and both ports are still up / down
  ports (a leaf's: any port above its node ports, so links kept after an oversubscription
  change stay where they are);
* a kept link keeps its cable id, medium, length, trunk and lane group when its run is still
  the same (same racks and units at both ends) and the trunk still joins the two racks;
* a trunk is kept while it carries a kept link, a patch panel while it holds a kept trunk.

Everything else in the frozen file is dropped; new elements go into free ports, lanes, panel
ports and rack units.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from ..model.cabling import Cable, PatchPanel, Trunk
from ..model.index import PortKey
from ..model.inventory import Inventory
from ..model.nodes import Switch

ROLE_RANK = {"leaf": 0, "spine": 1, "core": 2}


@dataclass(frozen=True)
class Frozen:
    switches: dict[str, Switch] = field(default_factory=dict)
    cables: tuple[Cable, ...] = ()
    panels: dict[str, PatchPanel] = field(default_factory=dict)
    trunks: dict[str, Trunk] = field(default_factory=dict)

    @classmethod
    def of_items(cls, switches: list[Switch], cables: list[Cable], panels: list[PatchPanel],
                 trunks: list[Trunk]) -> Frozen:
        """The items of a generated file as read back."""
        return cls({s.name: s for s in switches}, tuple(cables), {p.name: p for p in panels},
                   {t.id: t for t in trunks})

    @classmethod
    def of(cls, inv: Inventory) -> Frozen:
        """The generated part of a loaded inventory: its `generated` cables, the switches at their
        ends, the trunks they ride and those trunks' panels."""
        cables = tuple(c for c in inv.cables if c.generated)
        if not cables:
            return EMPTY
        ends = {ref.device for c in cables for ref in (c.a, c.b) if ref.hca is None}
        tids = {c.trunk for c in cables if c.trunk is not None}
        trunks = {t.id: t for t in inv.trunks if t.id in tids}
        pids = {p for t in trunks.values() for p in (t.a_panel, t.b_panel)}
        return cls({s.name: s for s in inv.switches if s.name in ends}, cables,
                   {p.name: p for p in inv.patch_panels if p.name in pids}, trunks)

    def __bool__(self) -> bool:
        return bool(self.cables) or bool(self.switches)

    @cached_property
    def host_cable(self) -> dict[PortKey, tuple[Cable, str, int]]:
        """HCA port -> (cable, switch, switch port) of every frozen node link."""
        out: dict[PortKey, tuple[Cable, str, int]] = {}
        for c in self.cables:
            if c.a.hca is not None and c.b.hca is None:
                out.setdefault(c.a.key, (c, c.b.device, c.b.port))
            elif c.b.hca is not None and c.a.hca is None:
                out.setdefault(c.b.key, (c, c.a.device, c.a.port))
        return out

    @cached_property
    def switch_links(self) -> dict[tuple[str, str], list[tuple[int, int, Cable]]]:
        """(lower switch, upper switch) -> (lower port, upper port, cable), lower port order."""
        out: dict[tuple[str, str], list[tuple[int, int, Cable]]] = {}
        sw = self.switches
        for c in self.cables:
            if c.a.hca is not None or c.b.hca is not None or c.a.device not in sw or c.b.device not in sw:
                continue
            lo, up = (c.a, c.b) if ROLE_RANK.get(sw[c.a.device].role, 9) <= ROLE_RANK.get(sw[c.b.device].role, 9) \
                else (c.b, c.a)
            out.setdefault((lo.device, up.device), []).append((lo.port, up.port, c))
        for links in out.values():
            links.sort(key=lambda t: t[0])
        return out

    def spines_per_group(self) -> int | None:
        """The most frozen spines in one pod (group): the spine count a re-plan keeps when it still fits."""
        counts: dict[int | None, int] = {}
        for s in self.switches.values():
            if s.role == "spine":
                counts[s.group] = counts.get(s.group, 0) + 1
        return max(counts.values(), default=None)

    def leaf_spine_links(self) -> int | None:
        """The most frozen links between one leaf and one spine (the design's p): with the spine count,
        what an oversubscription change keeps, so that it only adds or only removes links."""
        sw = self.switches
        return max((len(links) for (lo, up), links in self.switch_links.items()
                    if sw[lo].role == "leaf" and sw[up].role == "spine"), default=None)

    def cores_per_group(self) -> int | None:
        counts: dict[int | None, int] = {}
        for s in self.switches.values():
            if s.role == "core":
                counts[s.group] = counts.get(s.group, 0) + 1
        return max(counts.values(), default=None)


EMPTY = Frozen()
