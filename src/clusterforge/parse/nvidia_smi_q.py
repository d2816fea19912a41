"""``nvidia-smi -q`` (``--query``, ``-a``), including ``-q -d <SECTION>`` and ``-i N``.

The indented ``Key : value`` text is read into a tree, then per GPU: product name,
bus id, UUID, serial, VBIOS, driver version, MIG mode, ECC mode, ECC error counters
(volatile / aggregate, both the R450+ ``SRAM/DRAM`` layout and the legacy
``Single Bit``/``Double Bit`` layout, flattened as ``"Single Bit/Device Memory"``),
retired pages and the remapped-rows section.

Truncation is detected when a full listing (one with ``Product Name``) lacks the
``Processes`` entry, when a section header has no fields, or when the number of GPU
blocks is neither ``Attached GPUs`` nor 1 (``-i N`` prints one block).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clusterforge.parse._common import empty_error, fail, first_nonblank, shorten, split_lines, to_int

TOOL = "nvidia-smi-q"

__all__ = ["EccErrors", "NvidiaSmiQ", "PcieLink", "QGpu", "RemappedRows", "parse", "to_json"]

Value = int | str | None


@dataclass(frozen=True, slots=True)
class EccErrors:
    volatile: Mapping[str, Value]
    aggregate: Mapping[str, Value]
    other: Mapping[str, Value]
    """Everything else under ``ECC Errors`` (e.g. ``Aggregate Uncorrectable SRAM
    Sources/SRAM L2``, ``Channel Repair Pending``)."""


@dataclass(frozen=True, slots=True)
class RemappedRows:
    correctable: int | None
    uncorrectable: int | None
    pending: bool | None
    failure_occurred: bool | None
    histogram: Mapping[str, int | None]
    """``Max``/``High``/``Partial``/``Low``/``None`` -> number of banks."""
    other: Mapping[str, Value]


@dataclass(frozen=True, slots=True)
class PcieLink:
    """``PCI > GPU Link Info``: the PCIe generation and width the GPU runs at now, and the most it can."""

    gen_max: int | None
    gen_current: int | None
    width_max: int | None
    """Lanes (``16x`` -> 16)."""
    width_current: int | None


@dataclass(frozen=True, slots=True)
class QGpu:
    bus_id: str
    product_name: str | None
    product_brand: str | None
    product_architecture: str | None
    uuid: str | None
    serial: str | None
    vbios_version: str | None
    driver_version: str | None
    """Copied from the global ``Driver Version``."""
    mig_mode: str | None
    ecc_mode_current: str | None
    ecc_mode_pending: str | None
    ecc_errors: EccErrors | None
    """None when the section is absent or ``N/A``."""
    retired_pages: Mapping[str, Value] | None
    remapped_rows: RemappedRows | None
    """None when absent or ``Remapped Rows : N/A`` (pre-Ampere GPUs)."""
    line_no: int
    pcie: PcieLink | None = None
    """None when the listing has no ``GPU Link Info`` (``-d`` without PCI)."""
    max_clocks_mhz: Mapping[str, int] | None = None
    """``Max Clocks``: ``Graphics``, ``SM``, ``Memory``, ``Video`` -> MHz; None when absent."""


@dataclass(frozen=True, slots=True)
class NvidiaSmiQ:
    timestamp: str | None
    driver_version: str | None
    cuda_version: str | None
    attached_gpus: int | None
    gpus: tuple[QGpu, ...]


class _Node:
    __slots__ = ("children", "key", "line", "line_no", "value")

    def __init__(self, key: str, value: str | None, line_no: int, line: str) -> None:
        self.key = key
        self.value = value
        self.line_no = line_no
        self.line = line
        self.children: list[_Node] = []

    def get(self, key: str) -> _Node | None:
        for c in self.children:
            if c.key == key:
                return c
        return None

    def val(self, *path: str) -> str | None:
        node: _Node | None = self
        for key in path:
            node = node.get(key) if node is not None else None
        if node is None or node.value is None or node.value in ("N/A", ""):
            return None
        return node.value


_BANNER = "==============NVSMI LOG=============="
_NOTE_RE = re.compile(r"\s*\[[^\]]*\]$")
_GPU_RE = re.compile(r"GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])")


def _build(lines: list[str], start: int) -> _Node:
    root = _Node("", None, 0, "")
    stack: list[tuple[int, _Node]] = [(-1, root)]
    for idx in range(start, len(lines)):
        raw = lines[idx]
        if not raw.strip():
            continue
        body = raw.lstrip(" ")
        if body[0] == "\t":
            raise fail(TOOL, idx + 1, raw, "tab indentation is not nvidia-smi -q output")
        indent = len(raw) - len(body)
        while stack[-1][0] >= indent:
            stack.pop()
        body = body.rstrip()
        pos = body.find(" : ")
        if pos >= 0:
            key, value = body[:pos].rstrip(), body[pos + 3:].strip()
        elif body.endswith(" :"):
            key, value = body[:-2].rstrip(), ""
        else:
            key, value = body, None
        if not key:
            raise fail(TOOL, idx + 1, raw, f"line without a field name {shorten(raw)}")
        parent = stack[-1][1]
        node = _Node(key, value, idx + 1, raw)
        parent.children.append(node)
        stack.append((indent, node))
    _check_sections(root)
    return root


def _check_sections(node: _Node) -> None:
    todo = list(node.children)
    while todo:
        n = todo.pop()
        if n.value is None and not n.children:
            raise fail(TOOL, n.line_no, n.line,
                       f"section {n.key!r} has no fields (truncated or not nvidia-smi -q output)")
        todo.extend(n.children)


def _conv(raw: str | None) -> Value:
    if raw is None or raw in ("N/A", ""):
        return None
    num = to_int(raw)
    return num if num is not None else raw


def _flatten(node: _Node, prefix: str = "") -> dict[str, Value]:
    out: dict[str, Value] = {}
    for c in node.children:
        name = prefix + c.key
        if c.children:
            out.update(_flatten(c, name + "/"))
        else:
            out[name] = _conv(c.value)
    return out


def _strip_note(raw: str | None) -> str | None:
    """``610.62 [Deprecated; ...]`` (Windows R610+) -> ``610.62``."""
    if raw is None:
        return None
    return _NOTE_RE.sub("", raw) or None


def _yes_no(raw: str | None) -> bool | None:
    return {"Yes": True, "No": False}.get(raw or "")


def _ecc(gpu: _Node) -> EccErrors | None:
    sec = gpu.get("ECC Errors")
    if sec is None or not sec.children:
        return None
    vol = sec.get("Volatile")
    agg = sec.get("Aggregate")
    other = _Node("", None, 0, "")
    other.children = [c for c in sec.children if c.key not in ("Volatile", "Aggregate")]
    return EccErrors(
        volatile=_flatten(vol) if vol is not None else {},
        aggregate=_flatten(agg) if agg is not None else {},
        other=_flatten(other),
    )


def _remapped(gpu: _Node) -> RemappedRows | None:
    sec = gpu.get("Remapped Rows")
    if sec is None or not sec.children:
        return None
    hist: dict[str, int | None] = {}
    hsec = sec.get("Bank Remap Availability Histogram")
    if hsec is not None:
        for c in hsec.children:
            hist[c.key] = to_int((c.value or "").removesuffix(" bank(s)"))
    known = ("Correctable Error", "Uncorrectable Error", "Pending", "Remapping Failure Occurred",
             "Bank Remap Availability Histogram")
    rest = _Node("", None, 0, "")
    rest.children = [c for c in sec.children if c.key not in known]
    return RemappedRows(
        correctable=to_int(sec.val("Correctable Error") or ""),
        uncorrectable=to_int(sec.val("Uncorrectable Error") or ""),
        pending=_yes_no(sec.val("Pending")),
        failure_occurred=_yes_no(sec.val("Remapping Failure Occurred")),
        histogram=hist,
        other=_flatten(rest),
    )


def parse(text: str) -> NvidiaSmiQ:
    lines = split_lines(text)
    start = first_nonblank(lines)
    if start < 0:
        raise empty_error(TOOL)
    if lines[start].strip() != _BANNER:
        raise fail(TOOL, start + 1, lines[start],
                   f"expected the '{_BANNER}' banner, got {shorten(lines[start])}")
    root = _build(lines, start + 1)
    driver = _strip_note(root.val("Driver Version"))
    attached_raw = root.val("Attached GPUs")
    attached = to_int(attached_raw) if attached_raw is not None else None
    gpus: list[QGpu] = []
    for node in root.children:
        gm = _GPU_RE.fullmatch(node.key)
        if gm is None:
            if node.value is None and node.key.startswith("GPU"):
                raise fail(TOOL, node.line_no, node.line, f"malformed GPU header {node.key!r}")
            continue
        if node.value is not None:
            raise fail(TOOL, node.line_no, node.line, "GPU header with a value")
        if node.get("Product Name") is not None and node.get("Processes") is None:
            last = node
            while last.children:
                last = last.children[-1]
            raise fail(TOOL, last.line_no, last.line,
                       f"GPU {gm.group(1)} block ends without 'Processes' (truncated output)")
        gpus.append(QGpu(
            bus_id=gm.group(1),
            product_name=node.val("Product Name"),
            product_brand=node.val("Product Brand"),
            product_architecture=node.val("Product Architecture"),
            uuid=node.val("GPU UUID"),
            serial=node.val("Serial Number"),
            vbios_version=node.val("VBIOS Version"),
            driver_version=driver,
            mig_mode=node.val("MIG Mode", "Current"),
            ecc_mode_current=node.val("ECC Mode", "Current"),
            ecc_mode_pending=node.val("ECC Mode", "Pending"),
            ecc_errors=_ecc(node),
            retired_pages=_flatten(rp) if (rp := node.get("Retired Pages")) is not None else None,
            remapped_rows=_remapped(node),
            line_no=node.line_no,
            pcie=_pcie(node),
            max_clocks_mhz=_clocks(node.get("Max Clocks")),
        ))
    if not gpus:
        raise fail(TOOL, len(lines), lines[-1], "no 'GPU <bus id>' blocks (truncated output?)")
    if attached is not None and len(gpus) not in (attached, 1):
        raise fail(TOOL, len(lines), lines[-1],
                   f"{len(gpus)} GPU blocks but 'Attached GPUs : {attached}' (truncated output?)")
    return NvidiaSmiQ(
        timestamp=root.val("Timestamp"),
        driver_version=driver,
        cuda_version=_strip_note(root.val("CUDA Version")),
        attached_gpus=attached,
        gpus=tuple(gpus),
    )


def _lanes(raw: str | None) -> int | None:
    return to_int(raw[:-1]) if raw is not None and raw.endswith("x") else to_int(raw) if raw is not None else None


def _pcie(node: _Node) -> PcieLink | None:
    link = node.get("PCI")
    link = link.get("GPU Link Info") if link is not None else None
    if link is None:
        return None
    gen = link.get("PCIe Generation")
    width = link.get("Link Width")

    def num(n: _Node | None, key: str) -> int | None:
        raw = n.val(key) if n is not None else None
        return to_int(raw) if raw is not None else None

    return PcieLink(num(gen, "Max"), num(gen, "Current"),
                    _lanes(width.val("Max")) if width is not None else None,
                    _lanes(width.val("Current")) if width is not None else None)


def _clocks(node: _Node | None) -> Mapping[str, int] | None:
    if node is None:
        return None
    out: dict[str, int] = {}
    for child in node.children:
        if child.value is not None and child.value.endswith(" MHz") and (mhz := to_int(child.value[:-4])) is not None:
            out[child.key] = mhz
    return out


def to_json(records: NvidiaSmiQ) -> dict[str, Any]:
    def gpu(g: QGpu) -> dict[str, Any]:
        ecc = g.ecc_errors
        rr = g.remapped_rows
        return {
            "bus_id": g.bus_id,
            "product_name": g.product_name,
            "product_brand": g.product_brand,
            "product_architecture": g.product_architecture,
            "uuid": g.uuid,
            "serial": g.serial,
            "vbios_version": g.vbios_version,
            "driver_version": g.driver_version,
            "pcie": None if g.pcie is None else {"gen_max": g.pcie.gen_max, "gen_current": g.pcie.gen_current,
                                                  "width_max": g.pcie.width_max, "width_current": g.pcie.width_current},
            "max_clocks_mhz": dict(g.max_clocks_mhz) if g.max_clocks_mhz is not None else None,
            "mig_mode": g.mig_mode,
            "ecc_mode": {"current": g.ecc_mode_current, "pending": g.ecc_mode_pending},
            "ecc_errors": None if ecc is None else {
                "volatile": dict(ecc.volatile),
                "aggregate": dict(ecc.aggregate),
                "other": dict(ecc.other),
            },
            "retired_pages": dict(g.retired_pages) if g.retired_pages is not None else None,
            "remapped_rows": None if rr is None else {
                "correctable": rr.correctable,
                "uncorrectable": rr.uncorrectable,
                "pending": rr.pending,
                "failure_occurred": rr.failure_occurred,
                "histogram": dict(rr.histogram),
                "other": dict(rr.other),
            },
        }

    return {
        "timestamp": records.timestamp,
        "driver_version": records.driver_version,
        "cuda_version": records.cuda_version,
        "attached_gpus": records.attached_gpus,
        "gpus": [gpu(g) for g in records.gpus],
    }
