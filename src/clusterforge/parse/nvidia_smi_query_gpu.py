"""``nvidia-smi --query-gpu=<fields> --format=csv`` (header row required).

The header row names the fields (nvidia-smi prints canonical names, with units in
brackets: ``memory.total [MiB]``).  Values are kept as strings with the unit
suffix removed (``24564 MiB`` -> ``"24564"``).  Bracketed placeholders such as
``[N/A]``, ``[Not Supported]``, ``[Function Not Found]`` or ``[Requested
functionality has been deprecated]`` become None, with the text kept in
``unavailable``; so does a bare ``N/A`` (printed by some drivers for ``fabric.*``).
An empty cell stays ``""``.  A row whose field count differs from the header (e.g. an elided
``[...]`` line, a truncated row) is a :class:`ParseError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clusterforge.parse._common import empty_error, fail, first_nonblank, shorten, split_lines

TOOL = "nvidia-smi-query-gpu"

__all__ = ["QueryGpuField", "QueryGpuResult", "QueryGpuRow", "parse", "to_json"]


@dataclass(frozen=True, slots=True)
class QueryGpuField:
    name: str
    unit: str | None


@dataclass(frozen=True, slots=True)
class QueryGpuRow:
    values: Mapping[str, str | None]
    """Field name -> value (unit stripped); None when unavailable."""
    unavailable: Mapping[str, str]
    """Field name -> placeholder text without brackets (``N/A``, ``Not Supported``...)."""
    line_no: int


@dataclass(frozen=True, slots=True)
class QueryGpuResult:
    fields: tuple[QueryGpuField, ...]
    rows: tuple[QueryGpuRow, ...]


_FIELD_RE = re.compile(r"([A-Za-z_][\w.]*)(?: \[([^\]]+)\])?")
_PLACEHOLDER_RE = re.compile(r"\[([^\[\]]+)\]")


def parse(text: str) -> QueryGpuResult:
    lines = split_lines(text)
    start = first_nonblank(lines)
    if start < 0:
        raise empty_error(TOOL)
    hdr = lines[start]
    fields: list[QueryGpuField] = []
    for part in hdr.split(","):
        fm = _FIELD_RE.fullmatch(part.strip())
        if fm is None:
            raise fail(TOOL, start + 1, hdr,
                       f"expected a CSV header of field names, got {shorten(part.strip())}")
        fields.append(QueryGpuField(name=fm.group(1), unit=fm.group(2)))
    names = [f.name for f in fields]
    if len(set(names)) != len(names):
        raise fail(TOOL, start + 1, hdr, "duplicate field in header")
    rows: list[QueryGpuRow] = []
    for idx in range(start + 1, len(lines)):
        raw = lines[idx]
        if not raw.strip():
            continue
        if raw.strip() == "[...]":
            raise fail(TOOL, idx + 1, raw, "elided output ('[...]'): rows are missing")
        cells = [c.strip() for c in raw.split(", ")]
        if len(cells) != len(fields):
            raise fail(TOOL, idx + 1, raw,
                       f"expected {len(fields)} comma-separated values, got {len(cells)}")
        values: dict[str, str | None] = {}
        unavailable: dict[str, str] = {}
        for fld, cell in zip(fields, cells, strict=True):
            pm = _PLACEHOLDER_RE.fullmatch(cell)
            if pm is not None or cell == "N/A":
                values[fld.name] = None
                unavailable[fld.name] = pm.group(1) if pm is not None else cell
                continue
            if fld.unit is not None and cell.endswith(" " + fld.unit):
                cell = cell[: -len(fld.unit) - 1]
            values[fld.name] = cell
        rows.append(QueryGpuRow(values=values, unavailable=unavailable, line_no=idx + 1))
    if not rows:
        raise fail(TOOL, start + 1, hdr, "header row without any GPU rows")
    return QueryGpuResult(fields=tuple(fields), rows=tuple(rows))


def to_json(records: QueryGpuResult) -> dict[str, Any]:
    return {
        "fields": [f.name for f in records.fields],
        "units": {f.name: f.unit for f in records.fields if f.unit is not None},
        "rows": [dict(r.values) for r in records.rows],
        "unavailable": [dict(r.unavailable) for r in records.rows],
    }
