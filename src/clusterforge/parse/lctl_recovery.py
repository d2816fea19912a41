"""``lctl get_param obdfilter.*.recovery_status mdt.*.recovery_status`` (a Lustre server): per target it serves,
the state of its recovery after a (re)mount or a failover.

Each target is ``obdfilter.<fsname>-OST<hex4>.recovery_status=`` (an MDT: ``mdt.<fsname>-MDT<hex4>.``) followed
by the lines ``lprocfs_recovery_status_seq_show`` prints (lustre/obdclass/lprocfs_status_server.c)::

    obdfilter.lfs01-OST0000.recovery_status=
    status: COMPLETE
    recovery_start: 1764594000
    recovery_duration: 31
    completed_clients: 2048/2048
    replayed_requests: 0
    last_transno: 4294967296
    VBR: DISABLED
    IR: ENABLED

``status`` is INACTIVE, COMPLETE, WAITING (for other MDTs), WAITING_FOR_CLIENTS or RECOVERING (then
``time_remaining`` and ``connected_clients: n/m``, ``evicted_clients``). No real capture of this output is in the
samples: the tests use text built from that function, marked as constructed. A line that fits none of this is a
ParseError naming it; empty text (no target mounted here) parses to no targets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from clusterforge.parse._common import fail, numbered, split_lines

TOOL = "lctl-recovery"
STATUSES = ("INACTIVE", "COMPLETE", "WAITING", "WAITING_FOR_CLIENTS", "RECOVERING")

__all__ = ["TargetRecovery", "parse", "to_json"]


@dataclass(frozen=True, slots=True)
class TargetRecovery:
    target: str
    """``lfs01-OST0000``."""
    fsname: str
    status: str
    fields: dict[str, str] = field(default_factory=dict)
    """Every other ``key: value`` line as printed."""

    def clients(self, key: str) -> tuple[int, int] | None:
        """``completed_clients`` / ``connected_clients`` as (n, of m); None when absent or a bare count."""
        m = re.fullmatch(r"(\d+)/(\d+)", self.fields.get(key, ""))
        return (int(m.group(1)), int(m.group(2))) if m else None


_PARAM = re.compile(r"^(?:obdfilter|mdt)\.(([a-z][a-z0-9_]{0,7})-(?:OST|MDT)[0-9a-fA-F]{4})\.recovery_status=(.*)$")
_ROW = re.compile(r"^([A-Za-z_][A-Za-z_ -]*): ?(.*)$")


def parse(text: str) -> tuple[TargetRecovery, ...]:
    out: list[TargetRecovery] = []
    current: dict[str, Any] | None = None
    lines = split_lines(text)

    def close() -> None:
        if current is not None:
            if current["status"] is None:
                n = current["line"]
                raise fail(TOOL, n, lines[n - 1], "a target's recovery_status without its 'status:' line")
            out.append(TargetRecovery(current["target"], current["fsname"], current["status"], current["fields"]))

    for line_no, raw, _ in numbered(lines):  # the non-blank lines; indentation kept (rstrip only)
        line = raw.rstrip()
        m = _PARAM.match(line)
        if m:
            close()
            if any(t.target == m.group(1) for t in out):
                raise fail(TOOL, line_no, raw, f"{m.group(1)} twice")
            current = {"target": m.group(1), "fsname": m.group(2), "status": None, "fields": {}, "line": line_no}
            rest = m.group(3).strip()
            if rest:
                line = rest  # a one-line value (`status: INACTIVE` on the parameter's line)
            else:
                continue
        if current is None:
            raise fail(TOOL, line_no, raw, "expected 'obdfilter.<fsname>-OST<n>.recovery_status=' or the MDT's")
        row = _ROW.match(line)
        if row is None:
            raise fail(TOOL, line_no, raw, "expected 'key: value' (recovery_status)")
        key, value = row.group(1), row.group(2).strip()
        if key == "status":
            if value not in STATUSES:
                raise fail(TOOL, line_no, raw, f"unknown recovery status {value!r} ({', '.join(STATUSES)})")
            current["status"] = value
        else:
            current["fields"][key] = value
    close()
    return tuple(out)


def to_json(targets: tuple[TargetRecovery, ...]) -> list[dict[str, Any]]:
    return [{"target": t.target, "fsname": t.fsname, "status": t.status, "fields": dict(t.fields)} for t in targets]
