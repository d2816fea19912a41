"""nccl-tests output (``all_reduce_perf``, ``all_gather_perf``, ... and ``*_mpi`` builds).

Reads the ``# nThread ...`` parameter line, ``# Using devices`` rank lines, the
column header (which names the columns, so tests with other column sets work),
per-size rows (out-of-place and in-place time/algbw/busbw/#wrong), the
``# Out of bounds values`` and ``# Avg bus bandwidth`` footer, optional
``# nccl-tests version`` / ``# Collective test starting|concluded`` lines and the
``NCCL version`` banner.  Open MPI ``--tag-output`` prefixes (``[1,0]<stdout>:``)
are stripped; unrelated lines (MPI banners, NCCL INFO/WARN, X11 noise) are ignored
and failure lines (``Test NCCL failure``, ``Test failure``) are collected.

``status``: ``"ok"`` (footer present, out-of-bounds OK, no #wrong), ``"failed"``
(footer present but FAILED / #wrong > 0 / failure lines), ``"no result"`` (no
``Avg bus bandwidth`` footer: the run died or never started; ``avg_busbw`` is None,
never 0.0).  A data row that does not match the column header (e.g. cut mid-line)
is a :class:`ParseError`, as is empty input.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clusterforge.parse._common import UINT_RE, empty_error, fail, split_lines

TOOL = "nccl-tests"

__all__ = ["NcclDevice", "NcclResult", "NcclRow", "NcclTiming", "parse", "to_json"]


@dataclass(frozen=True, slots=True)
class NcclTiming:
    time_us: float | None
    algbw: float | None
    """GB/s."""
    busbw: float | None
    """GB/s."""
    wrong: int | None
    """``#wrong``; None when printed as ``N/A`` (validation disabled)."""


@dataclass(frozen=True, slots=True)
class NcclRow:
    size: int
    """Bytes."""
    count: int
    type: str
    redop: str | None
    root: int | None
    out_of_place: NcclTiming | None
    in_place: NcclTiming | None
    line_no: int


@dataclass(frozen=True, slots=True)
class NcclDevice:
    rank: int
    group: int
    pid: int
    host: str
    device: int
    bus_id: str
    name: str


@dataclass(frozen=True, slots=True)
class NcclResult:
    test: str | None
    """From ``# Collective test starting: <name>`` (newer nccl-tests), else None."""
    nccl_tests_version: str | None
    nccl_version: str | None
    params: Mapping[str, int | str]
    """``# nThread 1 nGpus 1 minBytes 8 ...`` -> {"nThread": 1, ..., "step": "2(factor)"}."""
    devices: tuple[NcclDevice, ...]
    rows: tuple[NcclRow, ...]
    out_of_bounds: int | None
    out_of_bounds_ok: bool | None
    avg_busbw: float | None
    """GB/s; None when the footer is missing (never 0.0 for a missing result)."""
    status: str
    """``ok``, ``failed`` or ``no result``."""
    failures: tuple[str, ...]
    """Failure lines printed by the ranks (``... Test NCCL failure common.cu:1204 ...``)."""


_TAG_RE = re.compile(r"\[\d+,\d+\]<(?:stdout|stderr)>:")
_DEVICE_RE = re.compile(
    r"#\s+Rank\s+(\d+) Group\s+(\d+) Pid\s+(\d+) on\s+(\S+) device\s+(\d+) \[([^\]]*)\] (.*)"
)
_OOB_RE = re.compile(r"# Out of bounds values : (\d+) (OK|FAILED)")
_AVG_RE = re.compile(r"# Avg bus bandwidth\s*: (\S+)")
_VERSION_RE = re.compile(r"# nccl-tests version (\S+).*")
_START_RE = re.compile(r"# Collective test (starting|concluded): (\S+)")
_NCCL_RE = re.compile(r"NCCL version (\S+)")
_FAILURE_RE = re.compile(r".*\b(?:Test (?:NCCL )?failure|Test CUDA failure)\b.*")
_ROW_START_RE = re.compile(r"[0-9]+\s")
_INT_RE = re.compile(r"-?[0-9]+")
_PARAM_KEY_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*:?")
_PARAM_VALUE_RE = re.compile(r"-?[0-9][0-9A-Za-z().]*")
_PER_RUN = ("time", "algbw", "busbw", "#wrong")


def _float(tok: str) -> float | None:
    """A number as nccl-tests prints it (ASCII; ``nan``/``inf`` kept as such), None for N/A or junk."""
    if tok == "N/A" or not tok.isascii():
        return None
    try:
        return float(tok)
    except ValueError:
        return None


def _params(text: str, idx: int, raw: str) -> dict[str, int | str]:
    """``nThread 1 nGpus 1 ... step: 2(factor) warmup iters: 5 ...`` -> dict (ParseError if malformed)."""
    out: dict[str, int | str] = {}
    key: list[str] = []
    for tok in text.split():
        if _PARAM_VALUE_RE.fullmatch(tok):
            if not key:
                raise fail(TOOL, idx, raw, f"parameter value {tok!r} without a name")
            out[" ".join(key).rstrip(":")] = int(tok) if _INT_RE.fullmatch(tok) else tok
            key = []
        elif _PARAM_KEY_RE.fullmatch(tok):
            key.append(tok)
        else:
            raise fail(TOOL, idx, raw, f"bad token {tok!r} in the parameter line")
    if key:
        raise fail(TOOL, idx, raw, f"parameter {' '.join(key)!r} has no value (truncated line?)")
    return out


def _timing(toks: dict[str, str]) -> NcclTiming:
    wrong = toks.get("#wrong")
    return NcclTiming(
        time_us=_float(toks.get("time", "N/A")),
        algbw=_float(toks.get("algbw", "N/A")),
        busbw=_float(toks.get("busbw", "N/A")),
        wrong=int(wrong) if wrong is not None and UINT_RE.fullmatch(wrong) else None,
    )


def parse(text: str) -> NcclResult:
    raw_lines = split_lines(text)
    if not any(ln.strip() for ln in raw_lines):
        raise empty_error(TOOL)
    test = version = nccl = None
    params: dict[str, int | str] = {}
    devices: list[NcclDevice] = []
    rows: list[NcclRow] = []
    failures: list[str] = []
    columns: list[str] | None = None
    oob: int | None = None
    oob_ok: bool | None = None
    avg: float | None = None
    for idx, raw in enumerate(raw_lines, start=1):
        line = _TAG_RE.sub("", raw, count=1) if raw.startswith("[") else raw
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            if s.startswith("# nThread "):
                params = _params(s[2:], idx, raw)
            elif (m := _DEVICE_RE.fullmatch(s)) is not None:
                devices.append(NcclDevice(rank=int(m.group(1)), group=int(m.group(2)),
                                          pid=int(m.group(3)), host=m.group(4),
                                          device=int(m.group(5)), bus_id=m.group(6),
                                          name=m.group(7).strip()))
            elif (m := _OOB_RE.fullmatch(s)) is not None:
                oob, oob_ok = int(m.group(1)), m.group(2) == "OK"
            elif (m := _AVG_RE.fullmatch(s)) is not None:
                avg = _float(m.group(1))
                if avg is None:
                    raise fail(TOOL, idx, raw, f"bad Avg bus bandwidth {m.group(1)!r}")
            elif (m := _VERSION_RE.fullmatch(s)) is not None:
                version = m.group(1)
            elif (m := _START_RE.fullmatch(s)) is not None:
                test = test or m.group(2)
            else:
                toks = s[1:].split()
                if toks[:2] == ["size", "count"]:
                    if rows or avg is not None:
                        raise fail(TOOL, idx, raw, "a second result table: one run per input")
                    columns = toks
            continue
        if columns is not None and avg is None and _ROW_START_RE.match(s):
            rows.append(_row(s, columns, idx, raw))
            continue
        if (m := _NCCL_RE.fullmatch(s)) is not None:
            nccl = m.group(1)
        elif _FAILURE_RE.fullmatch(s):
            failures.append(s)
    if avg is None:
        status = "no result"
    elif oob_ok is False or failures or not math.isfinite(avg) or any(
        t is not None and (t.wrong or 0) > 0 for r in rows for t in (r.out_of_place, r.in_place)
    ):
        status = "failed"
    else:
        status = "ok"
    return NcclResult(test=test, nccl_tests_version=version, nccl_version=nccl, params=params,
                      devices=tuple(devices), rows=tuple(rows), out_of_bounds=oob,
                      out_of_bounds_ok=oob_ok, avg_busbw=avg, status=status,
                      failures=tuple(failures))


def _row(s: str, columns: list[str], idx: int, raw: str) -> NcclRow:
    toks = s.split()
    if len(toks) != len(columns):
        raise fail(TOOL, idx, raw, f"result row has {len(toks)} fields, the column header "
                   f"has {len(columns)} (truncated line?)")
    named: dict[str, str] = {}
    runs: list[dict[str, str]] = []
    for col, tok in zip(columns, toks, strict=True):
        if col in _PER_RUN:
            if not runs or col in runs[-1]:
                runs.append({})
            runs[-1][col] = tok
        else:
            named[col] = tok
    for run in runs:
        for col, tok in run.items():
            ok = (tok == "N/A" or UINT_RE.fullmatch(tok) is not None) if col == "#wrong" else (
                tok == "N/A" or _float(tok) is not None)
            if not ok:
                raise fail(TOOL, idx, raw, f"bad {col} value {tok!r}")
    size, count = named.get("size", ""), named.get("count", "")
    if UINT_RE.fullmatch(size) is None or UINT_RE.fullmatch(count) is None:
        raise fail(TOOL, idx, raw, "size/count are not integers")
    root = named.get("root")
    if root is not None and _INT_RE.fullmatch(root) is None:
        raise fail(TOOL, idx, raw, f"bad root {root!r}")
    return NcclRow(
        size=int(size), count=int(count), type=named.get("type", ""),
        redop=named.get("redop"), root=int(root) if root is not None else None,
        out_of_place=_timing(runs[0]) if runs else None,
        in_place=_timing(runs[1]) if len(runs) > 1 else None,
        line_no=idx,
    )


def _timing_json(t: NcclTiming | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {"time_us": _finite(t.time_us), "algbw": _finite(t.algbw), "busbw": _finite(t.busbw),
            "wrong": t.wrong}


def _finite(value: float | None) -> float | None:
    """JSON has no NaN/Infinity: a ``nan``/``inf`` that nccl-tests printed becomes null."""
    return value if value is None or math.isfinite(value) else None


def to_json(records: NcclResult) -> dict[str, Any]:
    r = records
    return {
        "test": r.test,
        "nccl_tests_version": r.nccl_tests_version,
        "nccl_version": r.nccl_version,
        "params": dict(r.params),
        "devices": [
            {"rank": d.rank, "group": d.group, "pid": d.pid, "host": d.host,
             "device": d.device, "bus_id": d.bus_id, "name": d.name}
            for d in r.devices
        ],
        "rows": [
            {"size": row.size, "count": row.count, "type": row.type, "redop": row.redop,
             "root": row.root, "out_of_place": _timing_json(row.out_of_place),
             "in_place": _timing_json(row.in_place)}
            for row in r.rows
        ],
        "out_of_bounds": r.out_of_bounds,
        "out_of_bounds_ok": r.out_of_bounds_ok,
        "avg_busbw": _finite(r.avg_busbw),
        "status": r.status,
        "failures": list(r.failures),
    }
