"""Merge a generated plan into its inventory; what is declared always wins.

* A declared cable on a port the plan also cables overrides the planned cable. When it
  joins other ports it is an *as-built deviation* (reported; the planned cable is dropped).
  One that joins the same two ports is the same link and no deviation, whatever its id,
  medium or length; a frozen cable (`generated: true`, read back from
  `cabling.generated.yaml`) that differs from the current plan in any way is reported as
  *stale*: the plan changed since `plan --write`.
* Switches, patch panels and trunks declared under a generated name win too; they are
  reported only when they differ from the plan in where or what they are.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Literal, TypeVar

from ..catalog import Catalog
from ..model.cabling import Cable, PatchPanel, Trunk
from ..model.index import Index
from ..model.inventory import Inventory
from ..model.nodes import Switch
from .frozen import Frozen
from .generate import plan_fabric
from .result import Plan

Kind = Literal["as-built", "stale", "declared"]
Item = TypeVar("Item", PatchPanel, Trunk)


@dataclass(frozen=True, slots=True)
class Deviation:
    kind: Kind
    subject: str
    message: str


@dataclass(frozen=True)
class Merged:
    inv: Inventory  # the inventory with the plan merged in
    plan: Plan
    switches: tuple[Switch, ...]  # the generated items kept (what `plan --write` freezes)
    cables: tuple[Cable, ...]
    patch_panels: tuple[PatchPanel, ...]
    trunks: tuple[Trunk, ...]
    deviations: tuple[Deviation, ...]


def apply_plan(inv: Inventory, index: Index | None = None, cat: Catalog | None = None) -> Inventory:
    """`inv` with its fabric plan merged in (unchanged when it has no `fabric` spec). Pure.

    The generated part of `inv` (what `plan --write` froze, frozen.py) is re-planned, not
    merged: what the plan keeps of it stays as it is, what the spec no longer has is dropped,
    what it adds is added; so `inv` after a spec edit reads as the fabric `plan --write` would
    write."""
    if inv.fabric is None:
        return inv
    frozen = Frozen.of(inv)
    plan = plan_fabric(inv, index, cat, frozen)
    if not frozen:
        return merge_plan(inv, plan).inv
    tids, pids = set(frozen.trunks), set(frozen.panels)
    base = inv.model_copy(update={
        "switches": [s for s in inv.switches if s.name not in frozen.switches],
        "cables": [c for c in inv.cables if not c.generated],
        "patch_panels": [p for p in inv.patch_panels if p.name not in pids],
        "trunks": [t for t in inv.trunks if t.id not in tids]})
    return merge_plan(base, plan).inv


def _sw_key(s: Switch) -> tuple[object, ...]:
    return (s.model, s.role, s.rack, s.u, s.split, s.group, s.rail)


def _ends(c: Cable) -> frozenset[tuple[str, str | None, int]]:
    return frozenset((c.a.key, c.b.key))


def _same(d: Cable, c: Cable) -> bool:
    return (d.id == c.id and _ends(d) == _ends(c) and d.media == c.media and d.length_m == c.length_m
            and d.trunk == c.trunk and d.lane_group == c.lane_group)


def merge_plan(inv: Inventory, plan: Plan) -> Merged:
    devs: list[Deviation] = []
    declared_sw = {s.name: s for s in inv.switches}
    switches: list[Switch] = []
    for s in plan.switches:
        d = declared_sw.get(s.name)
        if d is None:
            switches.append(s)
        elif _sw_key(d) != _sw_key(s):
            devs.append(Deviation("declared", s.name, f"declared as {d.model} {d.role} in {d.rack} U{d.u}; "
                                  f"the plan has {s.model} {s.role} in {s.rack} U{s.u} (the declaration wins)"))
    cables, cable_devs = _cables(inv, plan)
    panels = _named(inv.patch_panels, plan.patch_panels, "name", devs)
    trunks = _named(inv.trunks, plan.trunks, "id", devs)
    merged = inv.model_copy(update={
        "switches": [*inv.switches, *switches], "cables": [*inv.cables, *cables],
        "patch_panels": [*inv.patch_panels, *panels], "trunks": [*inv.trunks, *trunks]})
    return Merged(merged, plan, tuple(switches), tuple(cables), tuple(panels), tuple(trunks),
                  (*devs, *cable_devs))


def _cables(inv: Inventory, plan: Plan) -> tuple[list[Cable], list[Deviation]]:
    at_port: dict[tuple[str, str | None, int], Cable] = {}
    for d in inv.cables:
        at_port.setdefault(d.a.key, d)
        at_port.setdefault(d.b.key, d)
    by_id = {d.id: d for d in inv.cables}
    kept: list[Cable] = []
    displaced: dict[str, list[Cable]] = defaultdict(list)
    matched: set[str] = set()
    for c in plan.cables:
        hits = {d.id: d for d in (at_port.get(c.a.key), at_port.get(c.b.key), by_id.get(c.id)) if d is not None}
        if not hits:
            kept.append(c)
            continue
        same = next(iter(hits.values()))
        if len(hits) == 1 and _ends(same) == _ends(c):  # the same link, declared (or frozen)
            matched.add(same.id)
            if same.generated and not _same(same, c):
                displaced[same.id].append(c)
            continue
        for d in hits.values():
            displaced[d.id].append(c)
    devs: list[Deviation] = []
    for d in inv.cables:
        if d.id in displaced:
            planned = "; ".join(f"{c.id}: {c.a} - {c.b}" for c in displaced[d.id][:3])
            if d.generated:
                devs.append(Deviation("stale", d.id, f"frozen cable {d.a} - {d.b} differs from the current plan "
                                      f"({planned}): run `clusterforge plan ENV --write`"))
            else:
                devs.append(Deviation("as-built", d.id, f"{d.a} - {d.b} is declared where the plan has {planned}"))
        elif d.generated and d.id not in matched:
            devs.append(Deviation("stale", d.id, f"frozen cable {d.a} - {d.b} is no longer in the plan: run "
                                  "`clusterforge plan ENV --write`"))
    return kept, devs


def _named(declared: list[Item], planned: tuple[Item, ...], key: str, devs: list[Deviation]) -> list[Item]:
    have = {getattr(x, key): x for x in declared}
    kept: list[Item] = []
    for item in planned:
        name = getattr(item, key)
        d = have.get(name)
        if d is None:
            kept.append(item)
        elif d.model_dump() != item.model_dump():
            devs.append(Deviation("declared", name, f"declared {type(d).__name__} differs from the plan "
                                  "(the declaration wins)"))
    return kept
