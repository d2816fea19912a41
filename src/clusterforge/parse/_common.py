"""Helpers shared by the parsers (internal)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

from clusterforge.parse.errors import ParseError
from clusterforge.util.echo import MAX_ECHO, echo
from clusterforge.util.guid import pad_guid

_HEX_RE = re.compile(r"(?:0[xX])?([0-9a-fA-F]{1,16})")
_INT_RE = re.compile(r"[+-]?\d+")
UINT_RE = re.compile(r"[0-9]+")
"""An unsigned ASCII decimal (``str.isdigit`` and ``\\d`` also take other scripts' digits)."""
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def split_lines(text: str) -> list[str]:
    """Split on ``\\n`` only (so line numbers match editors); strip a trailing ``\\r``.

    A final newline does not produce an extra empty line.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def numbered(lines: Iterable[str]) -> Iterator[tuple[int, str, str]]:
    """The non-blank lines as ``(line_no, raw, stripped)``, numbered from 1 (blank ones skipped).

    ``raw`` is what error messages quote; ``stripped`` is what the parsers match.
    """
    for idx, raw in enumerate(lines, start=1):
        s = raw.strip()
        if s:
            yield idx, raw, s


def shorten(line: str, limit: int = MAX_ECHO) -> str:
    """``repr`` of a line, cut to ``limit`` characters, for error messages (`clusterforge.util.echo.echo`)."""
    return echo(line, limit)


def fail(tool: str, line_no: int, line: str, message: str) -> ParseError:
    """Build a :class:`ParseError` (callers ``raise fail(...)``)."""
    return ParseError(tool, line_no, line, message)


def empty_error(tool: str) -> ParseError:
    return ParseError(tool, 1, "", "empty input: the tool always prints something")


def norm_guid(raw: str) -> str | None:
    """``'0x8f10500200b51'`` / ``'3048c749cd0001'`` -> ``'0x0008f10500200b51'``; None if invalid."""
    m = _HEX_RE.fullmatch(raw.strip())
    if m is None:
        return None
    return pad_guid(m.group(1))


def to_int(raw: str) -> int | None:
    """Decimal integer or None."""
    s = raw.strip()
    if _INT_RE.fullmatch(s) is None:
        return None
    return int(s)


def strip_ansi(line: str) -> str:
    return _ANSI_RE.sub("", line)


def first_nonblank(lines: Sequence[str]) -> int:
    """Index of the first non-blank line, or -1."""
    for i, ln in enumerate(lines):
        if ln.strip():
            return i
    return -1
