"""MPO-24 trunk packing for the links that leave their row.

Links between two racks in different rows are packed, per rack pair and in the planner's
growth order, onto 24-fiber MPO trunks: a link at a rate whose transceivers use `f`
fibers (catalog `media.fiber.fibers_per_link`, 8 for 4-lane SR) takes one lane group of
`f` fibers, so a trunk carries 24 // f links (3 at 8 fibers). A link takes the lowest free
lane group of the pair's first trunk that has one (so, from scratch, link n of a pair rides
trunk n // (24 // f) in lane group n % (24 // f)); a new trunk takes a free MPO port of a
patch panel at each end (a new 24-port panel when none has one). A re-plan first reserves
the frozen trunks, panels and lane groups its kept links use (`reserve`); new links fill the
free lanes. A link of an HA group member avoids the trunks and panels of its partners' links.

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
class _Trunk:
    id: str
    panels: tuple[str, str]
    lanes: bytearray  # 1: lane group in use
    free: int


@dataclass(slots=True)
class _Pair:
    fiber_type: str
    per_trunk: int
    trunks: list[_Trunk] = field(default_factory=list)
    cursor: int = 0  # trunks before it are full
    next_no: int = 1


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
    _by_id: dict[str, _Trunk] = field(default_factory=dict)
    _full: dict[str, int] = field(default_factory=dict)  # rack -> its panels before this index are full
    _fibers: dict[str, int] = field(default_factory=dict)  # rate -> fibers per link
    retired: set[str] = field(default_factory=set)  # frozen trunk ids and panel names: never reused for new ones

    def _pair(self, r1: str, r2: str, rate: str) -> tuple[tuple[str, str, int], _Pair]:
        fibers = self._fibers.get(rate)
        if fibers is None:
            fibers = self._fibers[rate] = (self.cat.media["fiber"].fibers_per_link or {}).get(rate, 8)
        key = (r1, r2, fibers)
        pair = self._pairs.get(key)
        if pair is None:
            worst = self.floor.length(r1, 1, r2, 1)
            size = self.cat.orderable_length("fiber", worst) or worst
            kind = self.picker.fiber_type(size, rate, f"trunk {r1} - {r2}")
            pair = self._pairs[key] = _Pair(kind, MPO_FIBERS // fibers)
        return key, pair

    def fiber_of(self, ra: str, rb: str, rate: str) -> str:
        """The fiber type of the trunks between two racks at `rate`."""
        r1, r2 = (ra, rb) if ra <= rb else (rb, ra)
        return self._pair(r1, r2, rate)[1].fiber_type

    def panels_of(self, tid: str) -> tuple[str, str]:
        return self._by_id[tid].panels

    def assign(self, ra: str, rb: str, rate: str, avoid: frozenset[str] | set[str] = frozenset()
               ) -> tuple[str, int, str]:
        """(trunk id, lane group, fiber type) for the next link between racks `ra` and `rb`: the lowest
        free lane of the first trunk of that pair with one, else a new trunk. `avoid`: trunk ids and
        panel names the link must not use (its HA partners')."""
        r1, r2 = (ra, rb) if ra <= rb else (rb, ra)
        fibers = self._fibers.get(rate)
        pair = self._pairs.get((r1, r2, fibers)) if fibers is not None else None
        if pair is None:
            _, pair = self._pair(r1, r2, rate)
        trunks = pair.trunks
        i, n = pair.cursor, len(trunks)
        while i < n and not trunks[i].free:
            i += 1
        pair.cursor = i
        if avoid:
            while i < n and (not trunks[i].free or trunks[i].id in avoid
                             or trunks[i].panels[0] in avoid or trunks[i].panels[1] in avoid):
                i += 1
        if i == n:
            self._new_trunk(r1, r2, MPO_FIBERS // pair.per_trunk, pair, avoid)
        t = trunks[i]
        lane = t.lanes.index(0)
        t.lanes[lane] = 1
        t.free -= 1
        self.links += 1
        return t.id, lane, pair.fiber_type

    def reserve(self, trunk: Trunk, ra: str, rb: str, rate: str, lanes: list[int],
                panels: tuple[PatchPanel, PatchPanel]) -> None:
        """Keep a frozen trunk (its panels kept too) with the lane groups its kept links use."""
        r1, r2 = (ra, rb) if ra <= rb else (rb, ra)
        _, pair = self._pair(r1, r2, rate)
        for p in panels:
            self._keep_panel(p)
        t = _Trunk(trunk.id, (trunk.a_panel, trunk.b_panel), bytearray(pair.per_trunk), pair.per_trunk)
        for lane in lanes:
            t.lanes[lane] = 1
            t.free -= 1
        pair.trunks.append(t)
        pair.next_no = max(pair.next_no, _number(trunk.id) + 1)
        self._by_id[t.id] = t
        self.trunks.append(trunk)
        self.links += len(lanes)

    def _keep_panel(self, p: PatchPanel) -> None:
        panels = self._racks.setdefault(p.rack, [])
        for have in panels:
            if have.name == p.name:
                have.used += 1
                return
        panels.append(_Panel(p.name, p.u, 1))
        self.panels.append(p)

    def _new_trunk(self, r1: str, r2: str, fibers: int, pair: _Pair, avoid: frozenset[str] | set[str]) -> None:
        tag = f"-f{fibers}" if fibers != 8 else ""
        n = pair.next_no
        pair.next_no += 1
        tid = f"T-{r1}-{r2}{tag}-{n}"
        if len(tid) > _ID_MAX:
            tid = self._trunk_id(r1, r2, tag, n)
        while self.retired and (tid in self.retired or tid in self._by_id):
            n = pair.next_no
            pair.next_no += 1
            tid = self._trunk_id(r1, r2, tag, n)
        (pa, ua), (pb, ub) = self._port(r1, avoid), self._port(r2, avoid)
        raw = self.floor.length(r1, ua, r2, ub)
        length = self.cat.orderable_length("fiber", raw)
        if length is None:
            raise PlanError(f"trunk {tid} would be {raw:.1f} m, longer than any orderable fiber")
        self.trunks.append(Trunk.model_validate(
            {"id": tid, "a_panel": pa, "b_panel": pb, "fiber_type": pair.fiber_type, "length_m": length}))
        t = _Trunk(tid, (pa, pb), bytearray(pair.per_trunk), pair.per_trunk)
        pair.trunks.append(t)
        self._by_id[tid] = t

    def prune(self) -> None:
        """Drop reserved trunks that no link rides; list the panels in the order the trunks first name
        them (from scratch: the order they were created in), dropping those left without a trunk."""
        empty = {t.id for pair in self._pairs.values() for t in pair.trunks if t.free == len(t.lanes)}
        if empty:
            self.trunks = [t for t in self.trunks if t.id not in empty]
        by_name = {p.name: p for p in self.panels}
        order = dict.fromkeys(name for t in self.trunks for name in (t.a_panel, t.b_panel))
        self.panels = [by_name[name] for name in order]

    @staticmethod
    def _trunk_id(r1: str, r2: str, tag: str, n: int) -> str:
        tid = f"T-{r1}-{r2}{tag}-{n}"
        return tid if len(tid) <= _ID_MAX else f"T-{_short(r1 + '|' + r2)}{tag}-{n}"

    def _port(self, rack: str, avoid: frozenset[str] | set[str]) -> tuple[str, int]:
        """A free MPO port in `rack`, on a panel not in `avoid`: (panel name, panel unit)."""
        panels = self._racks.setdefault(rack, [])
        if not avoid and panels and panels[-1].used < PANEL_PORTS:  # from scratch only the last one has room
            last = panels[-1]
            last.used += 1
            return last.name, last.u
        start = self._full.get(rack, 0)
        while start < len(panels) and panels[start].used >= PANEL_PORTS:
            start += 1
        self._full[rack] = start
        panel = next((panels[i] for i in range(start, len(panels))
                      if panels[i].used < PANEL_PORTS and panels[i].name not in avoid), None)
        if panel is None:
            no = max((_number(p.name) for p in panels), default=0) + 1
            name = _panel_name(rack, no)
            while name in self.retired:
                no += 1
                name = _panel_name(rack, no)
            u = self.floor.place_panel(rack)
            panel = _Panel(name, u)
            panels.append(panel)
            self.panels.append(PatchPanel(name=name, rack=rack, u=u, mpo_ports=PANEL_PORTS))
        panel.used += 1
        return panel.name, panel.u


def _panel_name(rack: str, no: int) -> str:
    name = f"{rack}-pp{no:02d}"
    return name if len(name) <= _NAME_MAX else f"pp-{_short(rack)}-{no:02d}"


def _number(name: str) -> int:
    """The trailing number of a trunk id or panel name (0 when there is none)."""
    digits = name[len(name.rstrip("0123456789")):]
    return int(digits) if digits else 0


def _short(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:10]
