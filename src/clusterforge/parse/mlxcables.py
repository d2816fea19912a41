"""``mlxcables`` (NVIDIA MFT): each cable's EEPROM as the HCA reads it, one block per cable.

The block (from a real ConnectX-6 capture, an HDR passive DAC):

    Cable #1:
    ---------
    Cable name    : mt4123_pciconf0_cable_0
    >> No FW data to show
    -------- Cable EEPROM --------
    Identifier                     : QSFP28 (11h)
    ...
    Temperature [c]                : N/A
    Length [m]                     : 2 m

`Temperature [c]` is ``N/A`` for a copper cable (no digital diagnostics); an optic with DDM prints a
number there (no such capture exists here: a plain decimal is read, anything else is a ParseError).
Continuation lines (`Attenuation`'s further frequencies) belong to the field above them. Self-contained
(only ParseError): `ib-health` embeds this module's source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clusterforge.parse.errors import ParseError

TOOL = "mlxcables"

__all__ = ["Cable", "parse"]

_CABLE_RE = re.compile(r"Cable #(\d+):")
_FIELD_RE = re.compile(r"([A-Za-z0-9][A-Za-z0-9 ./\[\]()-]*?)\s*:\s*(.*)")
_TEMP_RE = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True, slots=True)
class Cable:
    number: int
    name: str
    """MFT's cable name: ``<mst device>_cable_<n>`` (the mst device, not the IB device name)."""
    fields: tuple[tuple[str, str], ...]
    """Every `key : value` of the EEPROM section in order, continuation lines joined with `; `."""
    temperature_c: float | None
    """None when mlxcables prints N/A (no digital diagnostics: a copper cable)."""

    def field(self, key: str) -> str | None:
        return next((v for k, v in self.fields if k == key), None)


def _temperature(value: str, no: int, raw: str) -> float | None:
    if value == "N/A":
        return None
    if _TEMP_RE.fullmatch(value) is None:
        raise ParseError(TOOL, no, raw, f"temperature {value!r} is neither N/A nor a number")
    return float(value)


def parse(text: str) -> list[Cable]:
    cables: list[Cable] = []
    cur: dict[str, object] | None = None
    fields: list[list[str]] = []

    def close() -> None:
        if cur is None:
            return
        if not cur.get("name"):
            raise ParseError(TOOL, int(str(cur["line"])), str(cur["raw"]), "a cable block without `Cable name`")
        cables.append(Cable(int(str(cur["number"])), str(cur["name"]), tuple((k, v) for k, v in fields),
                            cur.get("temp")))  # type: ignore[arg-type]

    for no, raw in enumerate(text.split("\n"), start=1):
        raw = raw.rstrip("\r")
        line = raw.strip()
        if not line or line.startswith("Querying Cables") or line.startswith(">>") or set(line) == {"-"}:
            continue
        m = _CABLE_RE.fullmatch(line)
        if m is not None:
            close()
            cur, fields = {"number": m.group(1), "line": no, "raw": raw}, []
            continue
        if line.startswith("-") and "Cable EEPROM" in line:
            continue
        if cur is None:
            raise ParseError(TOOL, no, raw, "text before the first `Cable #N:`")
        f = _FIELD_RE.fullmatch(line)
        if f is None:
            raise ParseError(TOOL, no, raw, "not a `key : value` line")
        key, value = f.group(1).strip(), f.group(2).strip()
        if raw[:1] == " " and fields:  # a continuation under the value column (Attenuation's frequencies)
            fields[-1][1] += f"; {key}: {value}"
            continue
        if key == "Cable name":
            cur["name"] = value
            continue
        if key == "Temperature [c]":
            cur["temp"] = _temperature(value, no, raw)
        fields.append([key, value])
    close()
    if not cables:
        raise ParseError(TOOL, 1, "", "no `Cable #N:` block: mlxcables prints one per cable it found")
    return cables
