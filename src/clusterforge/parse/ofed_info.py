"""``ofed_info -s``: the installed MLNX_OFED / DOCA-OFED release, one line.

MLNX_OFED prints ``MLNX_OFED_LINUX-5.8-1.0.1.1:``; DOCA-OFED prints
``OFED-internal-24.10-1.1.4:``. The version is what follows the last product prefix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from clusterforge.parse._common import empty_error, fail, numbered, shorten, split_lines

TOOL = "ofed-info"

__all__ = ["OfedInfo", "parse", "to_json"]


@dataclass(frozen=True, slots=True)
class OfedInfo:
    product: str
    """``MLNX_OFED_LINUX`` or ``OFED-internal`` (DOCA)."""
    version: str
    """``24.10-1.1.4``."""


_LINE_RE = re.compile(r"(MLNX_OFED_LINUX|OFED-internal|MLNX_EN)-(\d[0-9A-Za-z.\-]*?):?")


def parse(text: str) -> OfedInfo:
    lines = [(i, ln) for i, ln, _ in numbered(split_lines(text))]
    if not lines:
        raise empty_error(TOOL)
    line_no, line = lines[0]
    m = _LINE_RE.fullmatch(line.strip())
    if m is None:
        raise fail(TOOL, line_no, line, f"expected 'MLNX_OFED_LINUX-<version>:', got {shorten(line)}")
    if len(lines) > 1:
        extra_no, extra = lines[1]
        raise fail(TOOL, extra_no, extra, "ofed_info -s prints one line")
    return OfedInfo(product=m.group(1), version=m.group(2))


def to_json(record: OfedInfo) -> dict[str, Any]:
    return {"product": record.product, "version": record.version}
