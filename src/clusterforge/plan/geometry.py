"""Floor geometry: how long a cable between two rack units has to be."""

from __future__ import annotations

from ..model.site import Rack, Site

U_M = 0.0445  # one rack unit, metres


class Geometry:
    """Cable runs on one site; the distance across rows is computed once per pair of rows."""

    def __init__(self, site: Site, rows: dict[str, int]) -> None:
        self.site = site
        self.rows = rows
        self._pitch = {r.name: r.pitch_m for r in site.rows}
        self._across: dict[tuple[int, int], float] = {}
        self._floor: dict[tuple[str, str], tuple[float, float]] = {}

    def _rows_between(self, ra: int, rb: int) -> float:
        lo, hi = min(ra, rb), max(ra, rb)
        value = self._across.get((lo, hi))
        if value is None:
            pitch = self._pitch
            value = sum(pitch.get(name, 1.2) for name, idx in self.rows.items() if lo <= idx < hi)
            self._across[(lo, hi)] = value
        return value

    def length(self, a: Rack, ua: int, b: Rack, ub: int) -> float:
        """Routed length in metres between unit `ua` of rack `a` and unit `ub` of rack `b`.

        Inside one rack the run is vertical plus the routing allowance. Between racks it goes
        up to the overhead tray, along the row(s), and down again: Manhattan distance over the
        floor (rack widths along a row, row pitch across rows) plus both vertical drops.
        """
        site = self.site
        if a.name == b.name:
            return abs(ua - ub) * U_M + site.routing_allowance_m
        pair = self._floor.get((a.name, b.name))
        if pair is None:
            along = abs(a.position - b.position) * max(a.width_m, b.width_m)
            pair = self._floor[(a.name, b.name)] = (
                along, self._rows_between(self.rows.get(a.row, 0), self.rows.get(b.row, 0)))
        along, across = pair
        drop = (a.u_height - ua) * U_M + (b.u_height - ub) * U_M + 2 * site.rack_to_tray_m
        return along + across + drop + site.routing_allowance_m

