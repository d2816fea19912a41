"""``sinfo -R`` (``--list-reasons``): the nodes out of service and why, as Slurm prints them.

A header line names the columns; each row below it holds one reason and the Slurm hostlist of the nodes it
applies to (``gpu[013-017,021-026]``). Columns are fixed width, where the header's words start: the default
format (``%20E %9u %19H %N``) cuts a reason at 20 characters (``gres/gpu GRES core s``), a wider ``-o``
(``sinfo -R -o '%60E %9u %19H %6t %N'``) keeps it whole and may add the node state (``STATE``). The header is
how the columns are found, so ``-h`` (``--noheader``) output is refused by name. A header with no rows is no node
out of service. Known columns: REASON, USER, TIMESTAMP, STATE, NODELIST (last: the rest of the line);
others are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from clusterforge.parse._common import empty_error, fail, shorten, split_lines
from clusterforge.util.hostlist import HostlistError, expand

TOOL = "sinfo-reasons"

__all__ = ["SinfoReason", "parse", "to_json"]

MAX_NODES = 100_000
"""The most node names one row may expand to (a cluster's worth; a range beyond it is not sinfo's)."""

_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}|Unknown|None")
_STATE = re.compile(r"[a-z_]+[*~#!%$@^-]?")


@dataclass(frozen=True, slots=True)
class SinfoReason:
    nodes: tuple[str, ...]
    """The nodes the row's hostlist names, in its order."""
    reason: str
    """As printed (cut to the column's width by sinfo)."""
    user: str
    """Who set it (`slurm` for slurmctld itself, `root` or an admin)."""
    since: str
    """TIMESTAMP as printed: ISO 8601 local time, or `Unknown`."""
    state: str | None = None
    """The node state (`drain`, `drained`, `down*`), where the format prints one."""


def _columns(header: str, line_no: int) -> list[tuple[str, int]]:
    cols = [(m.group(0), m.start()) for m in re.finditer(r"\S+", header)]
    names = [c for c, _ in cols]
    if not names or names[0] != "REASON":
        raise fail(TOOL, line_no, header, "expected sinfo -R's header (REASON USER TIMESTAMP NODELIST); "
                   f"got {shorten(header)} (output without a header, sinfo -h, cannot be read: the header places "
                   "the columns)")
    for need in ("REASON", "NODELIST"):
        if names.count(need) != 1:
            raise fail(TOOL, line_no, header, f"the header names {need} {names.count(need)} times, not once")
    if names[-1] != "NODELIST":
        raise fail(TOOL, line_no, header, "NODELIST is not the header's last column (its hostlist is the rest of "
                   "each line)")
    return cols


def _row(cols: list[tuple[str, int]], line_no: int, raw: str) -> SinfoReason:
    fields: dict[str, str] = {}
    for i, (name, start) in enumerate(cols):
        end = cols[i + 1][1] if i + 1 < len(cols) else None
        if len(raw) <= start:
            raise fail(TOOL, line_no, raw, f"the row ends before its {name} column (at character {start + 1})")
        if start > 0 and raw[start - 1] != " ":
            raise fail(TOOL, line_no, raw, f"the row runs into its {name} column (no space before character "
                       f"{start + 1}): not aligned with the header")
        fields[name] = raw[start:end].strip()
    nodelist = fields["NODELIST"]
    if not nodelist or " " in nodelist:
        raise fail(TOOL, line_no, raw, f"NODELIST {shorten(nodelist)} is not one hostlist")
    try:
        nodes = tuple(expand(nodelist, limit=MAX_NODES))
    except HostlistError as exc:
        raise fail(TOOL, line_no, raw, f"NODELIST: {exc}") from None
    since = fields.get("TIMESTAMP", "Unknown")
    if not _STAMP.fullmatch(since):
        raise fail(TOOL, line_no, raw, f"TIMESTAMP {shorten(since)} is not a time (YYYY-MM-DDTHH:MM:SS)")
    state = fields.get("STATE")
    if state is not None and not _STATE.fullmatch(state):
        raise fail(TOOL, line_no, raw, f"STATE {shorten(state)} is not a node state")
    if not fields["REASON"]:
        raise fail(TOOL, line_no, raw, "no REASON: sinfo -R lists a node only with one")
    return SinfoReason(nodes, fields["REASON"], fields.get("USER", ""), since, state)


def parse(text: str) -> tuple[SinfoReason, ...]:
    """Every row; a header alone is an empty tuple. ParseError on anything that is not sinfo -R's output."""
    lines = split_lines(text)
    rows: list[SinfoReason] = []
    cols: list[tuple[str, int]] | None = None
    for idx, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        if "\t" in raw:
            raise fail(TOOL, idx, raw, "a tab: sinfo pads its columns with spaces")
        if cols is None:
            cols = _columns(raw.rstrip(), idx)
            continue
        rows.append(_row(cols, idx, raw.rstrip()))
    if cols is None:
        raise empty_error(TOOL)
    return tuple(rows)


def to_json(records: tuple[SinfoReason, ...]) -> list[dict[str, Any]]:
    return [{"nodes": list(r.nodes), "reason": r.reason, "user": r.user, "since": r.since, "state": r.state}
            for r in records]
