"""perftest output (``ib_write_bw``, ``ib_read_bw``, ``ib_send_bw`` and the ``*_lat`` tests), client or server side.

Reads the test title (``RDMA_Write BW Test``, ``Send Latency Test``), the header's ``key : value`` pairs
(two to a line: device, connection type, link type, MTU), the column header (which names the columns and
their unit: ``BW average[Gb/sec]``, ``[MB/sec]`` or ``[MiB/sec]``; ``t_avg[usec]`` for latency) and each
message size's row. Lines perftest prints into the table (``Conflicting CPU frequency values detected``)
are kept as warnings; failure lines (``Completion with error``, ``Failed status``, ``Failed to complete``,
``Couldn't ...``, ``Unable to ...``) as errors.

``status``: ``"ok"`` (rows and no error), ``"failed"`` (an error line: the run died, whatever rows came
before it), ``"no result"`` (a header but no row: the run never got to measure). ``bw_avg_gbps`` is the
average bandwidth of the largest message size, in Gb/s whatever the unit printed (what an acceptance
test compares with the link's rate); None for a latency test or without a row. A row that does not match
its column header, text that is not perftest output at all, and empty input are a :class:`ParseError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clusterforge.parse._common import empty_error, fail, split_lines

TOOL = "perftest"

__all__ = ["PerftestResult", "PerftestRow", "parse", "to_json"]

_RULE_RE = re.compile(r"^-{20,}$")
_TITLE_RE = re.compile(r"^((?:RDMA_Write|RDMA_Read|Send|Atomic \w+|Read|Write)(?: Bidirectional)? (BW|Latency) Test)$")
_PAIR_RE = re.compile(r"([A-Za-z][A-Za-z0-9 .*_-]*?)\s*:\s*(\S+)")
_COLUMN_RE = re.compile(r"#\w+|([A-Za-z0-9_.%][^\[\]\t]*?)\[([^\]]+)\]|\S+")
_NUMBER_RE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
_ERROR_RE = re.compile(
    r"^(?:Completion with error|Failed status|Failed to|Couldn't|Unable to|Error|ERROR|"
    r"Conflicting parameters|\s*failed)", re.IGNORECASE)
_WARNING_RE = re.compile(r"^(?:Conflicting CPU frequency|WARNING|Warning)")
_NOTE_RE = re.compile(r"^(?:Max msg size in UD|Changing to this MTU|Disabling dynamic polling|"
                      r"local address|remote address|GID|\*+|scnt=)")

_GBPS_PER_UNIT = {"Gb/sec": 1.0, "MB/sec": 8e6 / 1e9, "MiB/sec": 8 * 2**20 / 1e9}
"""Gb/s in one of each unit perftest prints (``--report_gbits``: Gb/sec; default MB/sec, newer MiB/sec)."""


@dataclass(frozen=True, slots=True)
class PerftestRow:
    size_bytes: int
    iterations: int
    values: Mapping[str, float]
    """column name (``BW peak``, ``BW average``, ``MsgRate``, ``t_avg``, ...) -> value in its unit."""


@dataclass(frozen=True, slots=True)
class PerftestResult:
    test: str | None
    """The title (``RDMA_Write BW Test``), None when the output lacks its header (an excerpt)."""
    kind: str | None
    """``bw`` or ``lat``."""
    device: str | None
    connection: str | None
    link_type: str | None
    mtu: int | None
    units: Mapping[str, str]
    """column name -> unit as printed (``Gb/sec``, ``MB/sec``, ``MiB/sec``, ``usec``, ``Mpps``)."""
    rows: tuple[PerftestRow, ...]
    warnings: tuple[str, ...]
    errors: tuple[str, ...]
    status: str
    bw_avg_gbps: float | None
    bw_peak_gbps: float | None


def _columns(line: str, line_no: int) -> tuple[list[str], dict[str, str]]:
    names: list[str] = []
    units: dict[str, str] = {}
    for m in _COLUMN_RE.finditer(line.strip()):
        name = (m.group(1) or m.group(0)).strip()
        names.append(name)
        if m.group(2):
            units[name] = m.group(2)
    if len(names) < 3 or names[0] != "#bytes" or names[1] != "#iterations":
        raise fail(TOOL, line_no, line, "a perftest column header starts with '#bytes #iterations'")
    return names, units


def parse(text: str) -> PerftestResult:
    if not text.strip():
        raise empty_error(TOOL)
    test = kind = device = connection = link_type = None
    mtu: int | None = None
    columns: list[str] | None = None
    units: dict[str, str] = {}
    rows: list[PerftestRow] = []
    warnings: list[str] = []
    errors: list[str] = []
    recognised = False
    for line_no, raw in enumerate(split_lines(text), start=1):
        s = raw.strip()
        if not s or _RULE_RE.match(s):
            continue
        if (m := _TITLE_RE.match(s)) is not None:
            test, kind = m.group(1), "bw" if m.group(2) == "BW" else "lat"
            columns, recognised = None, True
            continue
        if s.startswith("#bytes"):
            columns, units = _columns(raw, line_no)
            recognised = True
            continue
        if _WARNING_RE.match(s):
            warnings.append(s)
            continue
        if _ERROR_RE.match(s):
            errors.append(s)
            recognised = True
            continue
        if _NOTE_RE.match(s):
            recognised = recognised or s.startswith(("local address", "remote address"))
            continue
        if columns is not None and s[0].isdigit():
            tokens = s.split()
            if len(tokens) != len(columns) or not all(_NUMBER_RE.match(t) for t in tokens):
                raise fail(TOOL, line_no, raw, f"a row of {len(columns)} numbers ({' '.join(columns)})")
            values = {name: float(tok) for name, tok in zip(columns[2:], tokens[2:], strict=True)}
            rows.append(PerftestRow(int(float(tokens[0])), int(float(tokens[1])), values))
            continue
        if columns is None and ":" in s and test is not None:
            for key, value in _PAIR_RE.findall(s):
                key = key.strip()
                if key == "Device":
                    device = value
                elif key == "Connection type":
                    connection = value
                elif key == "Link type":
                    link_type = value
                elif key == "Mtu":
                    mtu = int(value.split("[", 1)[0]) if value.split("[", 1)[0].isdigit() else None
            continue
        raise fail(TOOL, line_no, raw, "not a line of perftest output (title, header, column header, row, "
                   "or a warning or error perftest prints)")
    if not recognised:
        raise fail(TOOL, 1, split_lines(text)[0], "no perftest title, table or error line")
    status = "failed" if errors else "ok" if rows else "no result"
    avg = peak = None
    if kind == "bw" and rows:
        last = max(rows, key=lambda r: r.size_bytes)
        avg = _gbps(last, "BW average", units)
        peak = max((g for r in rows if (g := _gbps(r, "BW peak", units)) is not None), default=None)
    return PerftestResult(test, kind, device, connection, link_type, mtu, units, tuple(rows), tuple(warnings),
                          tuple(errors), status, avg, peak)


def _gbps(row: PerftestRow, column: str, units: Mapping[str, str]) -> float | None:
    value, unit = row.values.get(column), units.get(column)
    if value is None or unit not in _GBPS_PER_UNIT:
        return None
    return round(value * _GBPS_PER_UNIT[unit], 6)


def to_json(result: PerftestResult) -> dict[str, Any]:
    return {
        "test": result.test, "kind": result.kind, "device": result.device, "connection": result.connection,
        "link_type": result.link_type, "mtu": result.mtu, "units": dict(result.units),
        "rows": [{"size_bytes": r.size_bytes, "iterations": r.iterations, "values": dict(r.values)}
                 for r in result.rows],
        "warnings": list(result.warnings), "errors": list(result.errors), "status": result.status,
        "bw_avg_gbps": result.bw_avg_gbps, "bw_peak_gbps": result.bw_peak_gbps,
    }
