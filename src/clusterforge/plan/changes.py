"""What a re-plan changes against the frozen fabric: kept / changed / added / removed. Pure.

* switch: kept (same name, model, rack and unit), moved (same name, another place or model),
  added, removed;
* cable: kept (same two ports, id, medium, length, trunk and lane group), changed (same two
  ports, something else differs: a new run), added (two ports no frozen cable joins), removed;
* trunk: kept (same id and panels), added, removed; patch panel: kept (same name and place),
  added, removed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..model.cabling import Cable
from .frozen import Frozen
from .result import Plan


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


def changes(frozen: Frozen, plan: Plan) -> Changes:
    fs = frozen.switches
    ps = {s.name: s for s in plan.switches}
    same = [(fs[n].model, fs[n].rack, fs[n].u) == (s.model, s.rack, s.u) for n, s in ps.items() if n in fs]
    sw = Tally(kept=sum(same), changed=len(same) - sum(same), added=sum(1 for n in ps if n not in fs),
               removed=sum(1 for n in fs if n not in ps))
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
    pt = {t.id: t for t in plan.trunks}
    trunks = Tally(kept=sum(1 for t in pt.values() if frozen.trunks.get(t.id) == t),
                   changed=sum(1 for t in pt.values() if t.id in frozen.trunks and frozen.trunks[t.id] != t),
                   added=sum(1 for t in pt if t not in frozen.trunks),
                   removed=sum(1 for t in frozen.trunks if t not in pt))
    pp = {p.name: p for p in plan.patch_panels}
    panels = Tally(kept=sum(1 for p in pp.values() if frozen.panels.get(p.name) == p),
                   changed=sum(1 for p in pp.values() if p.name in frozen.panels and frozen.panels[p.name] != p),
                   added=sum(1 for p in pp if p not in frozen.panels),
                   removed=sum(1 for p in frozen.panels if p not in pp))
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
