"""``flint -d <device> q`` / ``mstflint -d <device> q`` (and ``q full``): one device's firmware image.

``Key: value`` rows (``FW Version``, ``FW Release Date``, ``Product Version``, ``PSID``, ``Part Number``,
``Security Attributes``, ...); ``Rom Info`` continues on indented lines; the second ``Description`` row is
the ``UID  GuidsNumber`` header of the ``Base GUID`` / ``Base MAC`` rows that follow it (a value and a
count). OEM images carry their own PSID (``IBM...``, ``HP_...``) and a ``Product Version`` that is not the
FW version; switch ASICs a four-part version and ``FW ISSU Version``. After a burn that has not been activated
(a reset, or an in-band switch's ``swreset``), flint prints ``FW Version(Running):`` under ``FW Version`` (the
image on the flash): ``fw_running`` is then what runs (mstflint's flint/subcommands.cpp, QuerySubCommand, prints
that row when the running version differs). A line of only backticks or tildes
(a markdown fence pasted with the output) is skipped. No ``FW Version``, a version that is not numbers joined
by dots (2 to 4 of at most 10 digits), a ``Base GUID`` count that is no count (over 10 digits, or not ASCII
digits), a line that is not a row, and empty input are a :class:`ParseError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clusterforge.parse._common import UINT_RE, empty_error, fail, norm_guid, split_lines
from clusterforge.util.echo import echo

TOOL = "flint-q"

__all__ = ["FlintQuery", "parse", "to_json"]

_ROW_RE = re.compile(r"^([A-Za-z][A-Za-z ]*?(?:\(Running\))?):\s+(.*)$")
_FENCE_RE = re.compile(r"^(?:`{3,}|~{3,})\w*$")
_VERSION_RE = re.compile(r"[0-9]{1,10}(?:\.[0-9]{1,10}){1,3}")
"""What flint prints as a version: 28.42.1000 (HCAs), 13.2010.3146 (switch ASICs); 2 to 4 parts."""
_MAX_COUNT_DIGITS = 10
"""A device's GUID count is a small number (4 to 128 in the captures); more digits are none flint prints."""


@dataclass(frozen=True, slots=True)
class FlintQuery:
    fw_version: str
    psid: str | None
    product_version: str | None
    part_number: str | None
    description: str | None
    """The vendor's description (``q full``), not the UID table header."""
    image_type: str | None
    release_date: str | None
    security: str | None
    base_guid: str | None
    guids: int | None
    roms: tuple[str, ...]
    fields: Mapping[str, str]
    """Every row as printed (the first of a repeated key)."""

    @property
    def fw_running(self) -> str:
        """What runs: the ``FW Version(Running)`` row when there is one (an activation pending), else the flash's."""
        return self.fields.get("FW Version(Running)", self.fw_version)

    @property
    def activation_pending(self) -> bool:
        return self.fw_running != self.fw_version


def parse(text: str) -> FlintQuery:
    if not text.strip():
        raise empty_error(TOOL)
    fields: dict[str, str] = {}
    roms: list[str] = []
    description: str | None = None
    base_guid: str | None = None
    guids: int | None = None
    last: str | None = None
    for line_no, raw in enumerate(split_lines(text), start=1):
        s = raw.strip()
        if not s or _FENCE_RE.match(s):
            continue
        if raw[:1].isspace() and last == "Rom Info":
            roms.append(s)
            continue
        m = _ROW_RE.match(s)
        if m is None:
            raise fail(TOOL, line_no, raw, "expected 'Key:  value' (flint query output)")
        key, value = m.group(1).strip(), m.group(2).strip()
        last = key
        if key == "Description" and value.split() == ["UID", "GuidsNumber"]:
            continue
        if key == "Description":
            description = value
        if key == "Rom Info":
            roms.append(value)
        if key == "Base GUID":
            parts = value.split()
            base_guid = norm_guid(parts[0]) if parts else None
            if base_guid is None:
                raise fail(TOOL, line_no, raw, f"'Base GUID' is not a GUID: {value!r}")
            if len(parts) > 1 and not (UINT_RE.fullmatch(parts[1]) and len(parts[1]) <= _MAX_COUNT_DIGITS):
                raise fail(TOOL, line_no, raw, f"'Base GUID' count is not a count of GUIDs: {echo(parts[1])}")
            guids = int(parts[1]) if len(parts) > 1 else None
        fields.setdefault(key, value)
    if "FW Version" not in fields:
        raise fail(TOOL, 1, split_lines(text)[0], "no 'FW Version' row")
    for key in ("FW Version", "FW Version(Running)"):
        if key in fields and not _VERSION_RE.fullmatch(fields[key]):
            line_no, raw = next((n, ln) for n, ln in enumerate(split_lines(text), start=1)
                                if ln.strip().startswith(key + ":"))
            raise fail(TOOL, line_no, raw, f"'{key}' is not a firmware version (numbers joined by dots, as "
                                           f"28.42.1000): {echo(fields[key])}")

    def get(key: str) -> str | None:
        value = fields.get(key)
        return None if value in (None, "N/A") else value

    return FlintQuery(fields["FW Version"], get("PSID"), get("Product Version"), get("Part Number"), description,
                      get("Image type"), get("FW Release Date"), get("Security Attributes"), base_guid, guids,
                      tuple(roms), fields)


def to_json(q: FlintQuery) -> dict[str, Any]:
    return {"fw_version": q.fw_version, "psid": q.psid, "product_version": q.product_version,
            "part_number": q.part_number, "description": q.description, "image_type": q.image_type,
            "release_date": q.release_date, "security": q.security, "base_guid": q.base_guid, "guids": q.guids,
            "roms": list(q.roms), "fields": dict(q.fields)}
