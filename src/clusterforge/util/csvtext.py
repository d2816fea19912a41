"""CSV cells for people and spreadsheets: RFC 4180 quoting and the formula guard.

Every CSV clusterforge writes (cabling work order and labels, plan exports, the bill of
materials) goes through `csv_line`. A cell that a spreadsheet would run as a formula
(starting with = + - @, a tab or a carriage return: OWASP's CSV-injection list) is written
as text: a leading `'` inside a quoted cell, so `=HYPERLINK(...)` shows as `'=HYPERLINK(...)`.
"""

from __future__ import annotations

from collections.abc import Iterable

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def plain_cell(text: str | None) -> bool:
    """True when `text` goes into a CSV cell as it is: no comma, quote or line break (RFC 4180), no
    edge space (spreadsheets strip it) and no formula start."""
    if text is None:
        return True
    return not ("," in text or '"' in text or "\n" in text or "\r" in text or text != text.strip()
                or text.startswith(FORMULA_START))


def csv_cell(value: object) -> str:
    """One cell: as it is when plain, else quoted, with `'` before a formula start."""
    text = "" if value is None else str(value)
    if plain_cell(text):
        return text
    if text.startswith(FORMULA_START):
        text = "'" + text
    return '"' + text.replace('"', '""') + '"'


def csv_line(cells: Iterable[object]) -> str:
    return ",".join([csv_cell(c) for c in cells])


def csv_text(rows: Iterable[Iterable[object]]) -> str:
    """Rows as CSV text, one line each, newline-terminated."""
    return "".join(csv_line(row) + "\n" for row in rows)
