"""``rpm -q --qf '%{NAME} %{VERSION}-%{RELEASE}\\n' PKG...``: installed package versions (EL hosts).

One ``name version-release`` line per installed package. For each package that is not installed rpm prints
``package NAME is not installed`` (on stdout; its exit status is how many), which is an absence here, never a
version. A package installed at two versions (a kernel) keeps the last line's.
"""

from __future__ import annotations

import re
from typing import Any

from clusterforge.parse._common import fail, numbered, shorten, split_lines

TOOL = "rpm-query"

__all__ = ["parse", "to_json"]

_LINE_RE = re.compile(r"([A-Za-z0-9][A-Za-z0-9_+.\-]*) ([0-9][0-9A-Za-z.+~^_\-]*-[0-9A-Za-z.+~^_]+)")
_MISSING_RE = re.compile(r"package \S+ is not installed")


def parse(text: str) -> dict[str, str]:
    """``{package: version-release}``; nothing of interest installed is an empty dict."""
    out: dict[str, str] = {}
    for idx, raw, line in numbered(split_lines(text)):
        if _MISSING_RE.fullmatch(line):
            continue
        m = _LINE_RE.fullmatch(line)
        if m is None:
            raise fail(TOOL, idx, raw, f"expected '<package> <version>-<release>', got {shorten(raw)}")
        out[m.group(1)] = m.group(2)
    return out


def to_json(records: dict[str, str]) -> dict[str, Any]:
    return dict(records)
