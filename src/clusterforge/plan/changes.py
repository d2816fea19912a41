"""What a re-plan changes against the frozen fabric: kept / changed / added / removed. Pure.

* switch: kept (same name, model, rack and unit), moved (same name, another place or model),
  added, removed;
* cable: kept (same two ports, id, medium, length, trunk and lane group), changed (same two
  ports, something else differs: a new run), added (two ports no frozen cable joins), removed;
* trunk: kept (same id and panels), added, removed; patch panel: kept (same name and place),
  added, removed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from ..model.cabling import Cable
from .frozen import Frozen
from .result import Plan

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Tally:
    kept: int = 0
    changed: int = 0  # switches: moved; cables: same ports, new run
    added: int = 0
    removed: int = 0

    @property
    def none(self) -> bool:
        return not (self.changed or self.added or self.removed)


@dataclass(frozen=True, slots=True)
class Changes:
    switches: Tally
    cables: Tally
    trunks: Tally
    patch_panels: Tally
    recabled_nodes: tuple[str, ...]  # nodes with a cable added, removed or re-run

    @property
    def none(self) -> bool:
        return all(t.none for t in (self.switches, self.cables, self.trunks, self.patch_panels))

    def to_dict(self) -> dict[str, Any]:
        out = {k: asdict(getattr(self, k)) for k in ("switches", "cables", "trunks", "patch_panels")}
        return {**out, "recabled_nodes": list(self.recabled_nodes), "none": self.none}


def _ends(c: Cable) -> frozenset[tuple[str, str | None, int]]:
    return frozenset((c.a.key, c.b.key))


def _run(c: Cable) -> tuple[object, ...]:
    return (c.id, c.media, c.length_m, c.fiber_type, c.trunk, c.lane_group)


def _tally(old: Mapping[str, _T], new: Mapping[str, _T], key: Callable[[_T], object] = lambda x: x) -> Tally:
    """Items by name: kept (KEY equal), changed (KEY differs), added, removed."""
    both = [n for n in new if n in old]
    kept = sum(1 for n in both if key(old[n]) == key(new[n]))
    return Tally(kept, len(both) - kept, len(new) - len(both), len(old) - len(both))


def changes(frozen: Frozen, plan: Plan) -> Changes:
    sw = _tally(frozen.switches, {s.name: s for s in plan.switches}, lambda s: (s.model, s.rack, s.u))
    old = {_ends(c): c for c in frozen.cables}
    new = {_ends(c): c for c in plan.cables}
    touched: set[str] = set()
    kept = changed = 0
    for ends, c in new.items():
        was = old.get(ends)
        if was is not None and _run(was) == _run(c):
            kept += 1
            continue
        changed += was is not None
        touched.update(ref.device for ref in (c.a, c.b) if ref.hca is not None)
    for ends, c in old.items():
        if ends not in new:
            touched.update(ref.device for ref in (c.a, c.b) if ref.hca is not None)
    removed = sum(1 for ends in old if ends not in new)
    cables = Tally(kept, changed, len(new) - kept - changed, removed)
    trunks = _tally(frozen.trunks, {t.id: t for t in plan.trunks})
    panels = _tally(frozen.panels, {p.name: p for p in plan.patch_panels})
    return Changes(sw, cables, trunks, panels, tuple(sorted(touched)))


def change_lines(ch: dict[str, Any]) -> list[str]:
    """The text form of `Changes.to_dict()`."""
    if ch["none"]:
        return ["changes against the frozen fabric: none"]
    def part(key: str, changed: str) -> str:
        t = ch[key]
        return (f"{key.replace('_', ' ')} {t['kept']} kept, {t['added']} added, {t['removed']} removed"
                + (f", {t['changed']} {changed}" if t["changed"] else ""))
    nodes = ch["recabled_nodes"]
    return ["changes against the frozen fabric: " + "; ".join(
        (part("switches", "moved"), part("cables", "re-run"), part("trunks", "changed"),
         part("patch_panels", "changed"))),
            f"nodes re-cabled: {len(nodes)}" + (f" ({', '.join(nodes[:12])}{', ...' if len(nodes) > 12 else ''})"
                                               if nodes else "")]
