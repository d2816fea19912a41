"""MPO-24 trunk packing for the links that leave their row.

Links between two racks in different rows are packed, per rack pair and in the planner's
growth order, onto 24-fiber MPO trunks: a link at a rate whose transceivers use `f`
fibers (catalog `media.fiber.fibers_per_link`, 8 for 4-lane SR) takes one lane group of
`f` fibers, so a trunk carries 24 // f links (3 at 8 fibers). Link n of a pair rides
trunk n // (24 // f) in lane group n % (24 // f); a new trunk takes the next free MPO
port of a patch panel at each end (a new 24-port panel when the last one is full).

Names: trunk `T-<rack a>-<rack b>-<n>` (racks in name order; `-f<fibers>` before n when
not 8), patch panel `<rack>-pp<NN>`; when a name would be too long for the model, the
racks are replaced by a short hash of them. The pair's fiber (OM4, else OS2, or
`fabric.trunk_fiber`) is chosen for the longest run any link of that pair can have, so
adding links never changes it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ..catalog import Catalog
from ..model.cabling import PatchPanel, Trunk
from .errors import PlanError
from .media import MediaPicker
from .placement import Floor

MPO_FIBERS = 24
PANEL_PORTS = 24
_ID_MAX = 41  # CableId
_NAME_MAX = 63  # Name


@dataclass(slots=True)
class _Pair:
    fiber_type: str
    per_trunk: int
    links: int = 0
    trunk: str = ""


@dataclass(slots=True)
class _Panel:
    name: str
    u: int
    used: int = 0


@dataclass
class TrunkPacker:
    floor: Floor
    cat: Catalog
    picker: MediaPicker
    panels: list[PatchPanel] = field(default_factory=list)
    trunks: list[Trunk] = field(default_factory=list)
    links: int = 0
    _pairs: dict[tuple[str, str, int], _Pair] = field(default_factory=dict)
    _racks: dict[str, list[_Panel]] = field(default_factory=dict)

    def assign(self, ra: str, rb: str, rate: str) -> tuple[str, int, str]:
        """(trunk id, lane group, fiber type) for the next link between racks `ra` and `rb`."""
        r1, r2 = (ra, rb) if ra <= rb else (rb, ra)
        fibers = (self.cat.media["fiber"].fibers_per_link or {}).get(rate, 8)
        key = (r1, r2, fibers)
        pair = self._pairs.get(key)
        if pair is None:
            worst = self.floor.length(r1, 1, r2, 1)
            size = self.cat.orderable_length("fiber", worst) or worst
            kind = self.picker.fiber_type(size, rate, f"trunk {r1} - {r2}")
            pair = self._pairs[key] = _Pair(kind, MPO_FIBERS // fibers)
        lane = pair.links % pair.per_trunk
        if lane == 0:
            pair.trunk = self._new_trunk(r1, r2, fibers, pair.links // pair.per_trunk, pair.fiber_type)
        pair.links += 1
        self.links += 1
        return pair.trunk, lane, pair.fiber_type

    def _new_trunk(self, r1: str, r2: str, fibers: int, n: int, kind: str) -> str:
        tag = f"-f{fibers}" if fibers != 8 else ""
        tid = f"T-{r1}-{r2}{tag}-{n + 1}"
        if len(tid) > _ID_MAX:
            tid = f"T-{_short(r1 + '|' + r2)}{tag}-{n + 1}"
        (pa, ua), (pb, ub) = self._port(r1), self._port(r2)
        raw = self.floor.length(r1, ua, r2, ub)
        length = self.cat.orderable_length("fiber", raw)
        if length is None:
            raise PlanError(f"trunk {tid} would be {raw:.1f} m, longer than any orderable fiber")
        self.trunks.append(Trunk.model_validate(
            {"id": tid, "a_panel": pa, "b_panel": pb, "fiber_type": kind, "length_m": length}))
        return tid

    def _port(self, rack: str) -> tuple[str, int]:
        """A free MPO port in `rack`: (panel name, panel unit)."""
        panels = self._racks.setdefault(rack, [])
        if not panels or panels[-1].used == PANEL_PORTS:
            name = f"{rack}-pp{len(panels) + 1:02d}"
            if len(name) > _NAME_MAX:
                name = f"pp-{_short(rack)}-{len(panels) + 1:02d}"
            u = self.floor.place_panel(rack)
            panels.append(_Panel(name, u))
            self.panels.append(PatchPanel(name=name, rack=rack, u=u, mpo_ports=PANEL_PORTS))
        panel = panels[-1]
        panel.used += 1
        return panel.name, panel.u


def _short(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:10]
