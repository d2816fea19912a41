"""``mlxlink -d <dev> [-p <port>] [-m] [-c]`` text output (MFT; mstflint's ``mstlink``): a port's link, its
module and its physical error counters, as an operator reads them.

The output is sections, each a title underlined with dashes, of ``Label<spaces>: value`` rows (real captures in
tests/fixtures/mlxlink/, each with its ``.source``):

- ``Operational Info`` (State, Physical state, Speed, Width, FEC, ...), ``Supported Info``, ``Troubleshooting
  Info`` (Status Opcode, Group Opcode, Recommendation), ``Tool Information`` (Firmware Version, amBER Version,
  MFT Version): the default;
- ``Module Info`` (``-m`` / ``--show_module``): Temperature [C], Voltage [mV], Bias Current [mA], Rx/Tx Power
  Current [dBm] per lane (``0,0,0,0``; a range in brackets after it, ``0 [0..0]``, on some versions), Vendor
  Name, Vendor Part Number, Vendor Serial Number, Identifier, Cable Type, ...;
- ``Physical Counters and BER Info`` (``-c`` / ``--show_counters``): Time Since Last Clear [Min], Effective
  Physical Errors and BER, Raw Physical Errors Per Lane, Raw Physical BER, Symbol Errors and BER (InfiniBand),
  Link Down Counter, Link Error Recovery Counter.

What is normal and read: trailing spaces after values (some versions), labels padded to 32 or 35 columns, a
blank or single-space line anywhere, sections missing or in another order, rows a version does not print,
``N/A`` (None), ``Ext.`` speed rows, ``-E-``/``-W-``/``-I-`` lines (an option this card does not support:
kept in ``messages``), and output filtered by ``grep`` (rows without their section's title: the rows are
known by their labels). A BER is ``<coef>E-<magnitude>`` (``15E-255`` is mlxlink's zero). What is not read: a
line that is none of these, a numeric row whose value is no number (``Temperature [C] : hot``) or one of more
than 20 digits (no reading is; a float would be ``inf``), and empty input: a ParseError naming the line and the
row, a long value named by its length, not echoed. Pure and self-contained (only ParseError): `ib-health`
embeds it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from clusterforge.parse.errors import ParseError

TOOL = "mlxlink"

__all__ = ["MlxlinkModule", "MlxlinkReport", "parse", "to_json"]

SECTIONS = ("Operational Info", "Supported Info", "Troubleshooting Info", "Tool Information", "Module Info",
            "Physical Counters and BER Info", "FEC Capability Info", "Test Mode Info", "Eye Opening Info",
            "Histogram Info", "Peripheral ERR Info", "Device Info", "BER Monitor Info", "PCIe Operational (Enabled) "
            "Info")
_ROW_RE = re.compile(r"^([A-Za-z][A-Za-z0-9 _.,/+()\[\]'&-]*?)\s*:(?:\s(.*)|)$")
_MESSAGE_RE = re.compile(r"^-[EWI]- \S.*$")
_BER_RE = re.compile(r"^(\d{1,6})E-(\d{1,4})$")
_NUMBER_RE = re.compile(r"^[+-]?\d+(?:\.\d+)?$")
_RANGE_SUFFIX_RE = re.compile(r"\s*\[[^\]]*\]$")
_RANGE_RE = re.compile(r"\[\s*([+-]?\d+(?:\.\d+)?)\s*\.\.\s*([+-]?\d+(?:\.\d+)?)\s*\]$")
_NA = ("N/A", "NA", "n/a", "")
MAX_DIGITS = 20
"""The most digits a number mlxlink prints has (a 64-bit counter: 20); past it a value is no reading."""
_SHOWN = 60
"""How much of a value a message quotes (a 5,000-digit one is named, not echoed)."""
ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
"""The color codes mlxlink writes around its messages."""


# Self-contained (only ParseError): ib-health embeds this module's source on the nodes.
def fail(tool: str, line_no: int, line: str, message: str) -> ParseError:
    return ParseError(tool, line_no, line, message)


def _lines(text: str) -> list[str]:
    """Lines split on \\n only (numbered as an editor numbers them), a trailing \\r and color codes cut."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ANSI_RE.sub("", ln[:-1] if ln.endswith("\r") else ln) for ln in lines]


@dataclass(frozen=True, slots=True)
class MlxlinkModule:
    """The module (`-m`): its readings per lane and who made it; None where mlxlink prints N/A."""

    temperature_c: float | None
    voltage_mv: float | None
    bias_ma: tuple[float, ...] | None
    rx_power_dbm: tuple[float, ...] | None
    tx_power_dbm: tuple[float, ...] | None
    identifier: str | None
    cable_type: str | None
    vendor: str | None
    part_number: str | None
    serial: str | None
    temperature_range: tuple[float, float] | None = None
    """The module's own alarm range of a reading, as mlxlink prints it after the value (`[lo..hi]`)."""
    rx_power_range: tuple[float, float] | None = None
    tx_power_range: tuple[float, float] | None = None


@dataclass(frozen=True, slots=True)
class MlxlinkReport:
    sections: Mapping[str, Mapping[str, str]]
    """section title -> label -> value as printed (trailing spaces cut); rows before any title under ``""``."""
    messages: tuple[str, ...] = ()
    """``-E-``/``-W-``/``-I-`` lines: an option the card does not support, a warning."""
    state: str | None = None
    physical_state: str | None = None
    speed: str | None = None
    width: str | None = None
    fec: str | None = None
    status_opcode: int | None = None
    recommendation: str | None = None
    firmware: str | None = None
    time_since_clear_min: float | None = None
    effective_errors: int | None = None
    effective_ber: float | None = None
    raw_errors_per_lane: tuple[int, ...] | None = None
    raw_ber: float | None = None
    symbol_errors: int | None = None
    symbol_ber: float | None = None
    link_down: int | None = None
    link_recovery: int | None = None
    module: MlxlinkModule | None = None
    line_of: Mapping[str, int] = field(default_factory=dict)
    """label -> the line it was read on (a finding names it)."""


def _value(text: str) -> str | None:
    return None if text in _NA else text


def _quoted(raw: str) -> str:
    """`raw` as a message quotes it: whole when short, else its start and its length."""
    return repr(raw) if len(raw) <= _SHOWN else f"{raw[:_SHOWN]!r}... ({len(raw):,} characters)"


def _numbers(label: str, raw: str, line_no: int, line: str, *, integer: bool = False) -> tuple[float, ...] | None:
    """``0,0,0,0`` or ``-2.3`` (``[lo..hi]`` after it dropped) -> numbers; None for N/A; ParseError else (a
    number of more than MAX_DIGITS digits too: no reading mlxlink prints, and no float or count holds it)."""
    text = _RANGE_SUFFIX_RE.sub("", raw).strip()
    if text in _NA or set(text.replace(",", "")) <= {"N", "/", "A"}:
        return None
    parts = [p.strip() for p in text.split(",")]
    if not all(_NUMBER_RE.fullmatch(p) for p in parts) or (integer and any("." in p for p in parts)):
        raise fail(TOOL, line_no, line, f"{label}: {_quoted(raw)} is not {'a count' if integer else 'a number'} "
                                        "(or numbers per lane, comma-separated) nor N/A")
    longest = max(len(p.lstrip("+-").replace(".", "")) for p in parts)
    if longest > MAX_DIGITS:
        raise fail(TOOL, line_no, line, f"{label}: a number of {longest:,} digits, past the {MAX_DIGITS} of any "
                                        "reading mlxlink prints")
    return tuple(float(p) for p in parts)


def _one(label: str, raw: str, line_no: int, line: str, *, integer: bool = False) -> float | None:
    values = _numbers(label, raw, line_no, line, integer=integer)
    if values is None:
        return None
    if len(values) != 1:
        raise fail(TOOL, line_no, line, f"{label}: {_quoted(raw)} is {len(values)} values, expected one")
    return values[0]


def _ber(label: str, raw: str, line_no: int, line: str) -> float | None:
    text = raw.strip()
    if text in _NA:
        return None
    m = _BER_RE.fullmatch(text)
    if m is None:
        raise fail(TOOL, line_no, line, f"{label}: {_quoted(raw)} is neither N/A nor <coef>E-<magnitude>")
    return float(f"{m.group(1)}e-{m.group(2)}")


_INTS = {"Effective Physical Errors": "effective_errors", "Symbol Errors": "symbol_errors",
         "Link Down Counter": "link_down", "Link Error Recovery Counter": "link_recovery",
         "Status Opcode": "status_opcode"}
_BERS = {"Effective Physical BER": "effective_ber", "Raw Physical BER": "raw_ber", "Symbol BER": "symbol_ber"}
_TEXTS = {"State": "state", "Physical state": "physical_state", "Speed": "speed", "Width": "width", "FEC": "fec",
          "Recommendation": "recommendation", "Firmware Version": "firmware"}


def parse(text: str) -> MlxlinkReport:
    if not text.strip():
        raise ParseError(TOOL, 1, "", "empty input: the tool always prints something")
    lines = _lines(text)
    sections: dict[str, dict[str, str]] = {}
    where: dict[str, tuple[int, str]] = {}
    messages: list[str] = []
    section = ""
    for no, raw in enumerate(lines, start=1):
        s = raw.strip()
        if not s or set(s) == {"-"}:
            continue
        if _MESSAGE_RE.match(s):
            messages.append(s)
            continue
        if s in SECTIONS:
            section = s
            sections.setdefault(section, {})
            continue
        m = _ROW_RE.match(s)
        if m is None:
            nxt = lines[no].strip() if no < len(lines) else ""
            if nxt and set(nxt) == {"-"} and ":" not in s and len(s) <= 60:  # a title this version adds
                section = s
                sections.setdefault(section, {})
                continue
            raise fail(TOOL, no, raw, "expected 'Label : value', a section title or an -E-/-W- line "
                                      "(mlxlink's text output)")
        label, value = m.group(1).strip(), (m.group(2) or "").strip()
        sections.setdefault(section, {})[label] = value
        where.setdefault(label, (no, raw))
    if not any(rows for rows in sections.values()):
        no, raw = next(((i, ln) for i, ln in enumerate(lines, start=1) if ln.strip()), (1, lines[0]))
        raise fail(TOOL, no, raw, "no 'Label : value' row (mlxlink prints its Operational Info at least)")
    flat: dict[str, str] = {}
    for rows in sections.values():
        for label, value in rows.items():
            flat.setdefault(label, value)
    out: dict[str, Any] = {}
    for label, name in _TEXTS.items():
        if label in flat:
            out[name] = _value(flat[label])
    for label, name in _INTS.items():
        if label in flat:
            v = _one(label, flat[label], *where[label], integer=True)
            out[name] = None if v is None else int(v)
    for label, name in _BERS.items():
        if label in flat:
            out[name] = _ber(label, flat[label], *where[label])
    if "Time Since Last Clear [Min]" in flat:
        out["time_since_clear_min"] = _one("Time Since Last Clear [Min]", flat["Time Since Last Clear [Min]"],
                                           *where["Time Since Last Clear [Min]"])
    lanes = "Raw Physical Errors Per Lane"
    if lanes in flat:
        per_lane = _numbers(lanes, flat[lanes], *where[lanes], integer=True)
        out["raw_errors_per_lane"] = None if per_lane is None else tuple(int(v) for v in per_lane)
    module = sections.get("Module Info")
    if module is not None:
        def num(label: str) -> float | None:
            return _one(label, module[label], *where[label]) if label in module else None

        def lanes_of(label: str) -> tuple[float, ...] | None:
            return _numbers(label, module[label], *where[label]) if label in module else None

        def word(label: str) -> str | None:
            return _value(module.get(label, ""))

        def bounds(label: str) -> tuple[float, float] | None:
            m = _RANGE_RE.search(module.get(label, ""))
            return (float(m.group(1)), float(m.group(2))) if m is not None else None

        out["module"] = MlxlinkModule(num("Temperature [C]"), num("Voltage [mV]"), lanes_of("Bias Current [mA]"),
                                      lanes_of("Rx Power Current [dBm]"), lanes_of("Tx Power Current [dBm]"),
                                      word("Identifier"), word("Cable Type"), word("Vendor Name"),
                                      word("Vendor Part Number"), word("Vendor Serial Number"),
                                      bounds("Temperature [C]"), bounds("Rx Power Current [dBm]"),
                                      bounds("Tx Power Current [dBm]"))
    return MlxlinkReport(sections={k: dict(v) for k, v in sections.items()}, messages=tuple(messages),
                         line_of={k: v[0] for k, v in where.items()}, **out)


def to_json(r: MlxlinkReport) -> dict[str, Any]:
    m = r.module
    return {
        "state": r.state, "physical_state": r.physical_state, "speed": r.speed, "width": r.width, "fec": r.fec,
        "status_opcode": r.status_opcode, "recommendation": r.recommendation, "firmware": r.firmware,
        "time_since_clear_min": r.time_since_clear_min, "effective_errors": r.effective_errors,
        "effective_ber": r.effective_ber, "raw_errors_per_lane": None if r.raw_errors_per_lane is None
        else list(r.raw_errors_per_lane), "raw_ber": r.raw_ber, "symbol_errors": r.symbol_errors,
        "symbol_ber": r.symbol_ber, "link_down": r.link_down, "link_recovery": r.link_recovery,
        "module": None if m is None else {
            "temperature_c": m.temperature_c, "voltage_mv": m.voltage_mv,
            "bias_ma": None if m.bias_ma is None else list(m.bias_ma),
            "rx_power_dbm": None if m.rx_power_dbm is None else list(m.rx_power_dbm),
            "tx_power_dbm": None if m.tx_power_dbm is None else list(m.tx_power_dbm),
            "identifier": m.identifier, "cable_type": m.cable_type, "vendor": m.vendor,
            "part_number": m.part_number, "serial": m.serial,
            "temperature_range": None if m.temperature_range is None else list(m.temperature_range),
            "rx_power_range": None if m.rx_power_range is None else list(m.rx_power_range),
            "tx_power_range": None if m.tx_power_range is None else list(m.tx_power_range)},
        "messages": list(r.messages),
        "sections": {k: dict(v) for k, v in r.sections.items()},
    }
