"""``nvidia-smi topo -m``: GPU/NIC connection matrix, CPU/NUMA affinity, NIC legend.

Accepts the native tab-separated layout and tab-expanded / re-spaced copies, with
or without the ``GPU NUMA ID`` column, ANSI escapes around the header, self cells
``' X '``/``'X '``/``' X'``, empty affinity cells (restricted cpusets) and NIC rows
with or without trailing tabs.  ``Legend:``/``NIC Legend:`` sections are optional.

Affinity in the tab layout is read by field position (nvidia-smi prints an extra
empty field before the last affinity column).  In a space-separated copy an empty
cell cannot be seen; when a GPU row has fewer affinity tokens than columns, a token
that looks like a CPU list (contains ``-`` or ``,``) is taken as CPU affinity and
the remaining tokens are right-aligned to the last columns.

Both an empty cell and ``N/A`` become None.  An ``ERROR: ...`` reply (e.g. the
Windows build rejecting ``-m``) raises :class:`ParseError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clusterforge.parse._common import empty_error, fail, first_nonblank, shorten, split_lines, strip_ansi

TOOL = "nvidia-smi-topo"

__all__ = ["NvidiaSmiTopo", "TopoAffinity", "parse", "to_json"]


@dataclass(frozen=True, slots=True)
class TopoAffinity:
    cpu: str | None
    """CPU list as printed (``0-47``, ``0,2,4``, ``44-51,148-155``); None if empty/N/A."""
    numa: str | None
    gpu_numa_id: str | None
    """None when the column is absent, empty or N/A."""


@dataclass(frozen=True, slots=True)
class NvidiaSmiTopo:
    gpus: tuple[str, ...]
    nics: tuple[str, ...]
    """Non-GPU devices (``NIC0``..., or ``mlx5_0`` in old drivers), header order."""
    matrix: Mapping[str, Mapping[str, str]]
    """``matrix[row][col]`` for every ordered pair of distinct devices (no self cells)."""
    affinity: Mapping[str, TopoAffinity]
    """One entry per GPU row when the header has affinity columns."""
    affinity_columns: tuple[str, ...]
    nic_legend: Mapping[str, str]
    """``NIC0 -> mlx5_0``; empty when the output has no NIC Legend."""


_AFF_WORDS = (("CPU", "Affinity"), ("NUMA", "Affinity"), ("GPU", "NUMA", "ID"))
_AFF_NAMES = {" ".join(w): w for w in _AFF_WORDS}
_DEV_RE = re.compile(r"[A-Za-z][\w.:-]*")
_CELL_RE = re.compile(r"X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC")
_LEGEND_ITEM_RE = re.compile(r"\s+\S+\s+= .*")
_NIC_LEGEND_RE = re.compile(r"\s*(\S+): (\S+)\s*")


def _header(tokens: list[str], ctx: tuple[int, str]) -> tuple[list[str], list[str]]:
    devices: list[str] = []
    aff: list[str] = []
    i = 0
    while i < len(tokens):
        for words in _AFF_WORDS:
            if tuple(tokens[i:i + len(words)]) == words:
                aff.append(" ".join(words))
                i += len(words)
                break
        else:
            if aff:
                raise fail(TOOL, ctx[0], ctx[1], f"unexpected header column {tokens[i]!r}")
            if _DEV_RE.fullmatch(tokens[i]) is None:
                raise fail(TOOL, ctx[0], ctx[1], f"bad device name {tokens[i]!r} in header")
            devices.append(tokens[i])
            i += 1
    if not any(d.startswith("GPU") for d in devices):
        raise fail(TOOL, ctx[0], ctx[1],
                   f"expected a header row naming GPU0..., got {shorten(ctx[1])}")
    if len(set(devices)) != len(devices) or len(set(aff)) != len(aff):
        raise fail(TOOL, ctx[0], ctx[1], "duplicate column in header")
    return devices, aff


def _affinity_tab(tail: list[str], k: int, ctx: tuple[int, str]) -> list[str]:
    """Affinity values of a tab row: the fields after the matrix (empty ones included).

    nvidia-smi separates some values by two tabs (``0-63\t0\t\tN/A``; with a NUMA
    affinity of N/A, ``0-7\t\tN/A\t\tN/A``; re-tabbed copies double every separator).
    All values present: they are read in order. Some empty (a restricted cpuset): by
    field position, the last column taking whatever is left; when that does not fit, the
    values are aligned as in a space-separated copy.
    """
    present = [t for t in tail if t]
    if len(present) > k:
        raise fail(TOOL, ctx[0], ctx[1], f"too many affinity values {present}")
    if len(present) == k:
        return present
    vals = [tail[i] if i < len(tail) else "" for i in range(k - 1)]
    rest = [t for t in tail[k - 1:] if t]
    if len(rest) > 1:
        return _affinity_spaces(present, k, ctx)
    vals.append(rest[0] if rest else "")
    return vals


def _affinity_spaces(tail: list[str], k: int, ctx: tuple[int, str]) -> list[str]:
    if len(tail) > k:
        raise fail(TOOL, ctx[0], ctx[1], f"too many affinity values {tail}")
    if len(tail) == k:
        return tail
    vals = [""] * k
    rest = tail
    if rest and ("-" in rest[0] or "," in rest[0]):
        vals[0], rest = rest[0], rest[1:]
    for i, tok in enumerate(rest):
        vals[k - len(rest) + i] = tok
    return vals


def parse(text: str) -> NvidiaSmiTopo:
    lines = [strip_ansi(ln) for ln in split_lines(text)]
    start = first_nonblank(lines)
    if start < 0:
        raise empty_error(TOOL)
    hdr_raw = lines[start]
    if hdr_raw.strip().startswith("ERROR:") or hdr_raw.strip().startswith("Failed"):
        raise fail(TOOL, start + 1, hdr_raw, f"nvidia-smi reported an error: {hdr_raw.strip()}")
    devices, aff_cols = _header(hdr_raw.split(), (start + 1, hdr_raw))
    ndev = len(devices)
    matrix: dict[str, dict[str, str]] = {}
    affinity: dict[str, TopoAffinity] = {}
    legend: dict[str, str] = {}
    i = start + 1
    while i < len(lines) and lines[i].strip() and lines[i].strip() != "Legend:":
        raw = lines[i]
        ctx = (i + 1, raw)
        if "\t" in raw:
            fields = [f.strip() for f in raw.split("\t")]
            # matrix cells are never empty: skip the empty fields doubled tabs leave between them
            at = [j for j, f in enumerate(fields) if f and j > 0][:ndev]
            label, cells = fields[0], [fields[j] for j in at]
            tail = fields[at[-1] + 1:] if len(at) == ndev else []
            tab = True
        else:
            toks = raw.split()
            label, cells, tail = toks[0], toks[1:ndev + 1], toks[ndev + 1:]
            tab = False
        if label not in devices:
            raise fail(TOOL, *ctx, f"row label {label!r} is not a header device")
        if label in matrix:
            raise fail(TOOL, *ctx, f"duplicate row {label!r}")
        if len(cells) != ndev:
            raise fail(TOOL, *ctx, f"expected {ndev} matrix cells, got {len(cells)}")
        row: dict[str, str] = {}
        for col, cell in zip(devices, cells, strict=True):
            if _CELL_RE.fullmatch(cell) is None:
                raise fail(TOOL, *ctx, f"bad matrix cell {cell!r} in column {col}")
            if (cell == "X") != (col == label):
                raise fail(TOOL, *ctx, f"cell {label}/{col} is {cell!r}")
            if col != label:
                row[col] = cell
        matrix[label] = row
        if label.startswith("GPU") and aff_cols:
            split = _affinity_tab if tab else _affinity_spaces
            vals = [None if v in ("", "N/A") else v for v in split(tail, len(aff_cols), ctx)]
            named = dict(zip(aff_cols, vals, strict=True))
            affinity[label] = TopoAffinity(
                cpu=named.get("CPU Affinity"),
                numa=named.get("NUMA Affinity"),
                gpu_numa_id=named.get("GPU NUMA ID"),
            )
        elif any(tail):
            raise fail(TOOL, *ctx, f"unexpected values after the matrix: {tail}")
        i += 1
    missing = [d for d in devices if d not in matrix]
    if missing:
        raw = lines[i] if i < len(lines) else ""
        raise fail(TOOL, min(i + 1, len(lines)), raw, f"missing matrix rows {missing} (truncated?)")
    section = ""
    for j in range(i, len(lines)):
        raw = lines[j]
        s = raw.strip()
        if not s:
            continue
        if s in ("Legend:", "NIC Legend:"):
            section = s
            continue
        if section == "Legend:" and _LEGEND_ITEM_RE.fullmatch(raw):
            continue
        nm = _NIC_LEGEND_RE.fullmatch(raw)
        if section == "NIC Legend:" and nm is not None:
            if nm.group(1) not in devices or nm.group(1).startswith("GPU"):
                raise fail(TOOL, j + 1, raw, f"NIC legend names unknown device {nm.group(1)!r}")
            legend[nm.group(1)] = nm.group(2)
            continue
        raise fail(TOOL, j + 1, raw, f"unexpected line after the matrix: {shorten(raw)}")
    return NvidiaSmiTopo(
        gpus=tuple(d for d in devices if d.startswith("GPU")),
        nics=tuple(d for d in devices if not d.startswith("GPU")),
        matrix=matrix,
        affinity=affinity,
        affinity_columns=tuple(aff_cols),
        nic_legend=legend,
    )


def to_json(records: NvidiaSmiTopo) -> dict[str, Any]:
    return {
        "gpus": list(records.gpus),
        "nics": list(records.nics),
        "matrix": {row: dict(cols) for row, cols in records.matrix.items()},
        "affinity": {
            gpu: {"cpu": a.cpu, "numa": a.numa, "gpu_numa_id": a.gpu_numa_id}
            for gpu, a in records.affinity.items()
        },
        "nic_legend": dict(records.nic_legend),
    }
