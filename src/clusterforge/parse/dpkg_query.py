"""``dpkg-query -W -f='${Package} ${Version}\\n' PKG...``: installed package versions.

One ``name version`` pair per line. Packages that are not installed are reported by
dpkg-query on stderr and are simply absent here.
"""

from __future__ import annotations

import re
from typing import Any

from clusterforge.parse._common import fail, numbered, shorten, split_lines

TOOL = "dpkg-query"

__all__ = ["parse", "to_json"]

_LINE_RE = re.compile(r"([a-z0-9][a-z0-9+.\-]+)(?::[a-z0-9]+)? ([0-9][0-9A-Za-z.+~:\-]*)")


def parse(text: str) -> dict[str, str]:
    """``{package: version}``; empty output (nothing of interest installed) is an empty dict."""
    out: dict[str, str] = {}
    for idx, raw, _ in numbered(split_lines(text)):
        m = _LINE_RE.fullmatch(raw.strip())
        if m is None:
            raise fail(TOOL, idx, raw, f"expected '<package> <version>', got {shorten(raw)}")
        out[m.group(1)] = m.group(2)
    return out


def to_json(records: dict[str, str]) -> dict[str, Any]:
    return dict(records)
