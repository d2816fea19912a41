"""``dcgmi diag -r <level>``: the result table (DCGM 2.x to 4.x) and its JSON form (``-j``).

The table has a metadata block (DCGM and driver version, the GPU device ids) and one row per test in
categories (``Deployment``, ``Integration``, ``Hardware``, ``Stress``); a result reads ``Pass``, ``Fail``,
``Warn``, ``Skip`` or ``Not Run``, optionally for some GPUs (``Pass - All``, ``Fail - GPU: 0``,
``Pass - GPUs: 1, 2``), or, in the DCGM 4 layout, one ``GPU<n>: <result>`` line per GPU below it. An
``Error`` / ``Warning`` / ``Info`` row belongs to the test above it; DCGM wraps its text at the cell's
width, cutting words: the pieces are joined back as DCGM cut them.

``status``: ``"fail"`` when a test failed, else ``"warn"`` when one warned, else ``"pass"`` (skipped tests
are not failures). The JSON form (``-j``): DCGM 3's ``"DCGM GPU Diagnostic"`` and DCGM 4's
``"DCGM Diagnostic"``, ``null`` entries skipped, anything before the first ``{`` (a warning DCGM prints)
skipped. A row outside the table, a table with no test, and empty input are a :class:`ParseError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from clusterforge.parse._common import empty_error, fail, split_lines

TOOL = "dcgmi-diag"
TOOL_JSON = "dcgmi-diag-json"

__all__ = ["DcgmDiag", "DcgmTest", "parse", "parse_json", "to_json"]

RESULTS = ("pass", "fail", "warn", "skip", "not run")
_RESULT_RE = re.compile(r"^(Pass|Fail|Warn|Skip|Not Run)(?:\s*-\s*(All|GPUs?:\s*[\d,\s]+))?\s*$", re.IGNORECASE)
_PER_GPU_RE = re.compile(r"^GPU\s*(\d+)\s*:\s*(Pass|Fail|Warn|Skip|Not Run)\s*$", re.IGNORECASE)
_SECTION_RE = re.compile(r"^[|+]-+\s+([A-Za-z][A-Za-z /]*?)\s+-+[+|]")
_MESSAGE_ROWS = {"Error": "error", "Warning": "warning", "Info": "info"}
_METADATA = {"DCGM Version": "dcgm_version", "Driver Version Detected": "driver_version",
             "GPU Device IDs Detected": "gpu_device_ids"}


@dataclass(frozen=True, slots=True)
class DcgmTest:
    category: str | None
    name: str
    result: str
    """pass | fail | warn | skip | not run (lower case)."""
    gpus: Mapping[int, str]
    """GPU index -> its result where the output names GPUs (``Fail - GPU: 0``, ``GPU0: Pass``); {} for ``All``."""
    messages: tuple[tuple[str, str], ...]
    """(error | warning | info, text) rows under the test."""


@dataclass(frozen=True, slots=True)
class DcgmDiag:
    dcgm_version: str | None
    driver_version: str | None
    gpu_device_ids: tuple[str, ...]
    tests: tuple[DcgmTest, ...]
    status: str

    def failed(self) -> tuple[DcgmTest, ...]:
        return tuple(t for t in self.tests if t.result == "fail")


@dataclass
class _Open:
    category: str | None
    name: str
    result: str
    gpus: dict[int, str] = field(default_factory=dict)
    messages: list[list[str]] = field(default_factory=list)

    def done(self) -> DcgmTest:
        texts = tuple((kind, "".join(parts).strip()) for kind, *parts in self.messages)
        return DcgmTest(self.category, self.name, self.result, dict(self.gpus), texts)


def _result(value: str, line_no: int, raw: str) -> tuple[str, dict[int, str]]:
    m = _RESULT_RE.match(value)
    if m is None:
        raise fail(TOOL, line_no, raw, "a result (Pass, Fail, Warn, Skip or Not Run, optionally '- GPU: n')")
    result = m.group(1).lower()
    gpus: dict[int, str] = {}
    if m.group(2) and m.group(2).lower() != "all":
        gpus = {int(g): result for g in re.findall(r"\d+", m.group(2))}
    return result, gpus


def parse(text: str) -> DcgmDiag:
    if not text.strip():
        raise empty_error(TOOL)
    meta: dict[str, str] = {}
    tests: list[DcgmTest] = []
    current: _Open | None = None
    last_meta: str | None = None
    message: list[str] | None = None
    category: str | None = None
    for line_no, raw in enumerate(split_lines(text), start=1):
        s = raw.strip()
        if not s or s.startswith("Successfully ran diagnostic"):
            continue
        if (m := _SECTION_RE.match(s)) is not None:
            category = m.group(1).strip()
            continue
        if s.startswith("+") and set(s) <= set("+-= "):
            continue
        row = raw.rstrip("\n").lstrip()
        if not (row.startswith("|") and row.count("|") >= 2):
            raise fail(TOOL, line_no, raw, "not a row of the dcgmi diag table ('| name | result |')")
        name_cell, value_cell = row[1:].split("|", 1)
        closed = value_cell.rstrip().endswith("|")
        value_cell = value_cell.rstrip()[:-1] if closed else value_cell.rstrip() + "   "  # an excerpt cut there
        name, value = name_cell.strip(), value_cell.strip()
        if name == "Diagnostic" and value == "Result":
            continue
        if category == "Metadata":
            if name:
                last_meta = _METADATA.get(name, name)
                meta[last_meta] = value
            elif last_meta is not None:
                meta[last_meta] += value
            continue
        if name in _MESSAGE_ROWS:
            if current is None:
                raise fail(TOOL, line_no, raw, f"an {name} row before any test")
            message = [_MESSAGE_ROWS[name], _piece(value_cell)]
            current.messages.append(message)
            continue
        if name:
            if current is not None:
                tests.append(current.done())
            result, gpus = _result(value, line_no, raw)
            current, message = _Open(category, name, result, gpus), None
            continue
        if current is None:
            raise fail(TOOL, line_no, raw, "a continuation row before any test")
        if message is not None:
            message.append(_piece(value_cell))
        elif (g := _PER_GPU_RE.match(value)) is not None:
            current.gpus[int(g.group(1))] = g.group(2).lower()
        else:
            result, gpus = _result(value, line_no, raw)
            current.gpus.update(gpus)
            if result == "fail" or (result == "warn" and current.result == "pass"):
                current.result = result
    if current is not None:
        tests.append(current.done())
    if not tests:
        raise fail(TOOL, 1, split_lines(text)[0], "no test result in the table")
    ids = tuple(i.strip() for i in meta.get("gpu_device_ids", "").split(",") if i.strip())
    return DcgmDiag(meta.get("dcgm_version"), meta.get("driver_version"), ids, tuple(tests), _status(tests))


def _piece(cell: str) -> str:
    """One wrapped piece of a message as DCGM cut it: the cell less its margins (one space before, two after:
    DCGM cuts the text every 45 characters into a 48-character cell)."""
    return cell[1:-2] if len(cell) >= 3 else cell.strip()


def _status(tests: list[DcgmTest]) -> str:
    results = {t.result for t in tests} | {r for t in tests for r in t.gpus.values()}
    return "fail" if "fail" in results else "warn" if "warn" in results else "pass"


def parse_json(text: str) -> DcgmDiag:
    """``dcgmi diag -j``: DCGM 3 (``DCGM GPU Diagnostic``) or DCGM 4 (``DCGM Diagnostic``)."""
    if not text.strip():
        raise empty_error(TOOL_JSON)
    start = text.find("{")
    if start < 0:
        raise fail(TOOL_JSON, 1, split_lines(text)[0], "no JSON object in the output")
    try:
        doc = json.loads(text[start:])
    except (ValueError, RecursionError) as exc:
        line_no = text.count("\n", 0, start) + getattr(exc, "lineno", 1)
        raise fail(TOOL_JSON, line_no, "", f"not JSON: {exc}") from None
    diag = doc.get("DCGM GPU Diagnostic") or doc.get("DCGM Diagnostic") if isinstance(doc, dict) else None
    if not isinstance(diag, dict) or not isinstance(diag.get("test_categories"), list):
        raise fail(TOOL_JSON, 1, "", "no 'DCGM GPU Diagnostic' / 'DCGM Diagnostic' object with test_categories")
    tests: list[DcgmTest] = []
    for cat in diag["test_categories"]:
        if not isinstance(cat, dict):
            continue
        for test in cat.get("tests") or []:
            if not isinstance(test, dict) or "name" not in test:
                continue
            gpus: dict[int, str] = {}
            messages: list[tuple[str, str]] = []
            results = [r for r in test.get("results") or [] if isinstance(r, dict)]
            for r in results:
                status = str(r.get("status", "")).lower().replace("_", " ")
                ids = r.get("gpu_ids", r.get("gpu_id"))
                for gid in (ids if isinstance(ids, list) else str(ids).split(",")) if ids is not None else []:
                    if str(gid).strip().isdigit():
                        gpus[int(str(gid).strip())] = status
                for kind in ("error", "warning", "info"):
                    for msg in _texts(r.get(kind)):
                        messages.append((kind, msg))
            states = set(gpus.values()) | {str(r.get("status", "")).lower() for r in results}
            result = next((x for x in ("fail", "warn", "pass", "skip", "not run") if x in states), "not run")
            tests.append(DcgmTest(str(cat.get("category")) if cat.get("category") else None, str(test["name"]),
                                  result, gpus, tuple(messages)))
    if not tests:
        raise fail(TOOL_JSON, 1, "", "no test result in the JSON")
    version = diag.get("version") or doc.get("version")
    return DcgmDiag(str(version) if version else None, None, (), tuple(tests), _status(tests))


def _texts(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [m for v in value for m in _texts(v)]
    if isinstance(value, dict):
        return [str(value.get("message") or value.get("msg") or json.dumps(value))]
    return [str(value)]


def to_json(result: DcgmDiag) -> dict[str, Any]:
    return {
        "dcgm_version": result.dcgm_version, "driver_version": result.driver_version,
        "gpu_device_ids": list(result.gpu_device_ids), "status": result.status,
        "tests": [{"category": t.category, "name": t.name, "result": t.result,
                   "gpus": {str(k): v for k, v in sorted(t.gpus.items())},
                   "messages": [{"kind": k, "text": x} for k, x in t.messages]} for t in result.tests],
    }
