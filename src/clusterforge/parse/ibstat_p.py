"""``ibstat -p``: one port GUID per line, CA then port order."""

from __future__ import annotations

import re

from clusterforge.parse._common import empty_error, fail, norm_guid, numbered, shorten, split_lines

TOOL = "ibstat-p"

__all__ = ["parse", "to_json"]

# ibstat prints "0x%016" PRIx64: exactly 16 digits (fewer means a cut line)
_GUID_RE = re.compile(r"0x[0-9a-fA-F]{16}")


def parse(text: str) -> tuple[str, ...]:
    """Return the port GUIDs, normalised to ``0x`` + 16 lower-case hex digits."""
    lines = split_lines(text)
    guids: list[str] = []
    for idx, raw, s in numbered(lines):
        if _GUID_RE.fullmatch(s) is None:
            raise fail(TOOL, idx, raw,
                       f"expected a 0x + 16 hex digit port GUID, got {shorten(raw)}")
        guid = norm_guid(s)
        assert guid is not None
        guids.append(guid)
    if not guids:
        raise empty_error(TOOL)
    return tuple(guids)


def to_json(records: tuple[str, ...]) -> list[str]:
    return list(records)
