"""Floor geometry: how long a cable between two rack units has to be."""

from __future__ import annotations

from ..model.site import Rack, Site

U_M = 0.0445  # one rack unit, metres


def cable_length(site: Site, rows: dict[str, int], a: Rack, ua: int, b: Rack, ub: int) -> float:
    """Routed length in metres between unit `ua` of rack `a` and unit `ub` of rack `b`.

    Inside one rack the run is vertical plus the routing allowance. Between racks it goes
    up to the overhead tray, along the row(s), and down again: Manhattan distance over the
    floor (rack widths along a row, row pitch across rows) plus both vertical drops.
    """
    if a.name == b.name:
        return abs(ua - ub) * U_M + site.routing_allowance_m
    pitch = {r.name: r.pitch_m for r in site.rows}
    along = abs(a.position - b.position) * max(a.width_m, b.width_m)
    ra, rb = rows.get(a.row, 0), rows.get(b.row, 0)
    lo, hi = min(ra, rb), max(ra, rb)
    across = sum(pitch.get(name, 1.2) for name, idx in rows.items() if lo <= idx < hi)
    drop = (a.u_height - ua) * U_M + (b.u_height - ub) * U_M + 2 * site.rack_to_tray_m
    return along + across + drop + site.routing_allowance_m
