"""Cabling work order and printable cable labels (CSV, for people and label printers).

CSV has no comment syntax, so these two files carry no banner (a comment line would
break spreadsheet and label-printer imports); cells are quoted here, the templates
only join them. Cells go through `csvtext` (RFC 4180 quoting, formula guard).
"""

from __future__ import annotations

from typing import Any

from ..model.index import PortKey
from ..util.csvtext import csv_line, plain_cell
from ..util.numtext import num_text
from .fabric import FabricView
from .spec import FileSpec

WORK_ORDER_HEADER = [
    "cable_id", "label", "a_rack", "a_u", "a_device", "a_port", "b_rack", "b_u", "b_device", "b_port",
    "media", "fiber_type", "length_m", "trunk", "lane_group",
]
LABELS_HEADER = ["cable_id", "end", "line1", "line2", "line3"]


def _port(key: PortKey) -> str:
    """How a technician names a port: `17` on a switch, `mlx5_0/1` on a node."""
    return str(key[2]) if key[1] is None else f"{key[1]}/{key[2]}"


def work_order(fab: FabricView) -> dict[str, Any]:
    # every cell but the free-text label comes from a pattern-checked model field (ids, names, ports,
    # literals, numbers) that never needs quoting: a row is quoted cell by cell only for such a label
    place = fab.index.places
    rows: list[str] = []
    for link in fab.links:
        c, a, b = link.cable, link.a, link.b
        (ra, ua), (rb, ub) = place[a[0]], place[b[0]]
        cells = [
            c.id, c.label or c.id, ra, str(ua), a[0], _port(a), rb, str(ub), b[0], _port(b), c.media,
            c.fiber_type or "", num_text(c.length_m), c.trunk or "",
            "" if c.lane_group is None else str(c.lane_group),
        ]
        rows.append(",".join(cells) if plain_cell(c.label) else csv_line(cells))
    return {"header": csv_line(WORK_ORDER_HEADER), "rows": rows}


def _where(place: dict[str, tuple[str, int]], key: PortKey) -> str:
    """`lab-su01-net U2 leaf-su01-r0 port 1`, `lab-su01-r01 U2 gpu01 mlx5_0 port 1`."""
    rack, u = place[key[0]]
    device = key[0] if key[1] is None else f"{key[0]} {key[1]}"
    return f"{rack} U{u} {device} port {key[2]}"


def labels(fab: FabricView) -> dict[str, Any]:
    place = fab.index.places
    rows: list[str] = []
    for link in fab.links:
        c = link.cable
        extra = f"{c.media} {num_text(c.length_m)} m" + (f" trunk {c.trunk}" if c.trunk else "")
        head = f"{c.label or c.id} ({extra})"
        wa, wb = _where(place, link.a), _where(place, link.b)
        if plain_cell(c.label):  # as in the work order: only a free-text label may need quoting
            rows.append(f"{c.id},A,{head},{wa},to {wb}")
            rows.append(f"{c.id},B,{head},{wb},to {wa}")
        else:
            rows.append(csv_line([c.id, "A", head, wa, "to " + wb]))
            rows.append(csv_line([c.id, "B", head, wb, "to " + wa]))
    return {"header": csv_line(LABELS_HEADER), "rows": rows}


def cabling_files(fab: FabricView) -> list[FileSpec]:
    return [
        FileSpec("cabling/work-order.csv", "cabling/work-order.csv.j2", work_order(fab)),
        FileSpec("cabling/labels.csv", "cabling/labels.csv.j2", labels(fab)),
    ]
