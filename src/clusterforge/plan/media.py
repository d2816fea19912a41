"""Cable media and orderable length of one link, from where its two ends sit.

* Same rack: passive copper (DAC) where an orderable length is within its reach at the
  link rate, else active copper (ACC), else an active optical cable (AOC).
* Another rack in the same row: AOC where it reaches, else transceivers and fiber.
* Another row: transceivers and fiber over an MPO-24 trunk between patch panels
  (trunks.py packs them); links asked for without a trunk (the infrastructure nodes')
  are chosen as within a row: AOC where it reaches, else an individual fiber.
* Lengths are the routed run (plan/geometry.py) rounded up to the medium's next
  orderable length (catalog `orderable_m`). Fiber: `fabric.trunk_fiber` if set, else
  OM4 multimode where it reaches at the rate, else OS2 single-mode.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog import Catalog
from .errors import PlanError
from .placement import Floor

_COPPER_FIRST = ("DAC", "ACC", "AOC")


@dataclass(frozen=True, slots=True)
class Run:
    media: str
    length_m: float
    fiber_type: str | None
    trunked: bool


class MediaPicker:
    def __init__(self, floor: Floor, cat: Catalog, fiber: str | None) -> None:
        self.floor = floor
        self.cat = cat
        self.fiber = fiber
        self._cache: dict[tuple[float, int, str], Run] = {}

    def pick(self, ra: str, ua: int, rb: str, ub: int, rate: str, trunk: bool = True) -> Run:
        raw = self.floor.length(ra, ua, rb, ub)
        floor = self.floor
        where = 0 if ra == rb else 1 if not trunk or floor.row_of(ra) == floor.row_of(rb) else 2
        key = (raw, where, rate)
        run = self._cache.get(key)
        if run is None:
            run = self._cache[key] = self._pick(raw, where, ra, rb, rate)
        return run

    def _fits(self, media: str, length: float, rate: str) -> float | None:
        reach = self.cat.reach(media, rate)
        size = self.cat.orderable_length(media, length)
        if reach is None or size is None or size > reach:
            return None
        return size

    def _pick(self, raw: float, where: int, ra: str, rb: str, rate: str) -> Run:
        if where == 2:
            size = self._fiber_length(raw, ra, rb)
            return Run("fiber", size, None, True)
        candidates = _COPPER_FIRST if where == 0 else ("AOC",)
        for media in candidates:
            fit = self._fits(media, raw, rate)
            if fit is not None:
                return Run(media, fit, None, False)
        size = self._fiber_length(raw, ra, rb)
        return Run("fiber", size, self.fiber_type(size, rate, f"{ra} - {rb}"), False)

    def _fiber_length(self, raw: float, ra: str, rb: str) -> float:
        size = self.cat.orderable_length("fiber", raw)
        if size is None:
            longest = self.cat.media["fiber"].orderable_m[-1]
            raise PlanError(f"the run from {ra} to {rb} is {raw:.1f} m, longer than any orderable fiber "
                            f"({longest:g} m)", ["move the switch row closer to the scalable units"])
        return size

    def fiber_type(self, length: float, rate: str, where: str) -> str:
        """The fiber for a run of `length` metres at `rate`: fabric.trunk_fiber, or OM4 else OS2."""
        choices = [self.fiber] if self.fiber else ["OM4", "OS2"]
        for kind in choices:
            reach = self.cat.reach("fiber", rate, kind)
            if reach is not None and length <= reach:
                return kind
        kind = choices[-1]
        reach = self.cat.reach("fiber", rate, kind)
        raise PlanError(f"{where}: {length:g} m of {kind} fiber is beyond its "
                        f"{reach if reach is not None else 0:g} m reach at {rate}",
                        [*(["trunk_fiber: OS2 (single-mode, DR transceivers)"] if kind != "OS2" else []),
                         "move the switch row closer to the scalable units"])
