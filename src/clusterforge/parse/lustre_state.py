"""``lctl get_param osc.*.state mdc.*.state`` (Lustre client): each import's state and its recent history.

Each device's value is what ``lprocfs_state_seq_show`` (lustre/obdclass/lprocfs_status.c) prints:

    osc.lustre-OST0000-osc-ffff8a1c2e3f4000.state=
    current_state: FULL
    state_history:
     - [ 1700000000, CONNECTING ]
     - [ 1700000001, FULL ]

`lctl get_param` prints a value that spans lines as ``<param>=`` on its own line, the value below it.
The history is the kernel's ring of the last 16 state changes (IMP_STATE_HIST_LEN), oldest first, each
``[ unix time, state ]``; releases before 2.x printed ``[%ld, %s]`` without the inner spaces (both
are read). State names are ptlrpc_import_state_name's. No Lustre mounted: lctl prints nothing on stdout
(an error on stderr, a non-zero exit), and empty text parses to no imports. Anything else that is not
this format (a history line before any ``<param>=`` line, an unknown state name, a block cut before
``state_history:``) is a ParseError naming the line. Self-contained (only ParseError): `ib-health`
embeds this module's source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from clusterforge.parse.errors import ParseError

TOOL = "lustre-state"

__all__ = ["STATES", "LustreImport", "parse", "to_json"]

STATES = frozenset({"CLOSED", "NEW", "DISCONN", "CONNECTING", "REPLAY", "REPLAY_LOCKS", "REPLAY_WAIT",
                    "RECOVER", "FULL", "EVICTED", "IDLE"})
"""ptlrpc_import_state_name's names (lustre_import.h), `<UNKNOWN>` (state 0, never printed) left out."""

# <kind>.<target>-<kind>-<instance>.state= : the instance is the superblock address on a client
# (ffff8a1c2e3f4000) or a server name (MDT0000); the target is everything before the last -<kind>-
_PARAM_RE = re.compile(r"(osc|mdc)\.(([A-Za-z0-9_-]+)-(osc|mdc)-([A-Za-z0-9_]+))\.state=")
_CURRENT_RE = re.compile(r"current_state:\s*(\S+)")
_HISTORY_RE = re.compile(r"-\s*\[\s*([0-9]+)\s*,\s*([^\s\],]+)\s*\]")


@dataclass(frozen=True, slots=True)
class LustreImport:
    device: str
    """The client device: ``lustre-OST0000-osc-ffff8a1c2e3f4000``."""
    kind: str
    """``osc`` (an OST) or ``mdc`` (an MDT)."""
    target: str
    """The server target: ``lustre-OST0000`` (the device name before ``-osc-`` / ``-mdc-``)."""
    current_state: str
    history: tuple[tuple[int, str], ...]
    """``(unix time, state)``, oldest first as the kernel prints them (at most 16)."""

    @property
    def full(self) -> bool:
        return self.current_state == "FULL"

    @property
    def last_evicted(self) -> int | None:
        """Unix time of the newest EVICTED entry of the history; None when there is none."""
        times = [t for t, state in self.history if state == "EVICTED"]
        return max(times) if times else None


def _state(name: str, no: int, raw: str) -> str:
    if name not in STATES:
        raise ParseError(TOOL, no, raw, f"unknown import state {name!r} (expected one of "
                                        f"{', '.join(sorted(STATES))})")
    return name


@dataclass(slots=True)
class _Block:
    """The import being read: its `<param>=` line, what of its value came so far."""

    device: str
    kind: str
    target: str
    line: int
    raw: str
    current: str | None = None
    has_history: bool = False  # `state_history:` seen (the history itself may be empty)
    history: list[tuple[int, str]] = field(default_factory=list)

    def done(self) -> LustreImport:
        if self.current is None or not self.has_history:
            missing = "current_state:" if self.current is None else "state_history:"
            raise ParseError(TOOL, self.line, self.raw, f"a state block without `{missing}` (cut output)")
        return LustreImport(self.device, self.kind, self.target, self.current, tuple(self.history))


def parse(text: str) -> tuple[LustreImport, ...]:
    out: list[LustreImport] = []
    seen: dict[str, int] = {}
    cur: _Block | None = None
    for no, raw in enumerate(text.split("\n"), start=1):
        raw = raw.rstrip("\r")
        line = raw.strip()
        if not line:
            continue
        m = _PARAM_RE.fullmatch(line)
        if m is not None:
            kind, device, target, dev_kind, _ = m.groups()
            if dev_kind != kind:
                raise ParseError(TOOL, no, raw, f"a {kind} parameter of a {dev_kind} device")
            if device in seen:
                raise ParseError(TOOL, no, raw, f"{kind}.{device}.state again (first on line {seen[device]})")
            if cur is not None:
                out.append(cur.done())
            seen[device] = no
            cur = _Block(device, kind, target, no, raw)
            continue
        if cur is None:
            raise ParseError(TOOL, no, raw, "expected an `osc.<device>.state=` or `mdc.<device>.state=` line")
        c = _CURRENT_RE.fullmatch(line)
        if c is not None:
            if cur.current is not None:
                raise ParseError(TOOL, no, raw, "a second `current_state:` in one state block")
            cur.current = _state(c.group(1), no, raw)
            continue
        if line == "state_history:":
            if cur.current is None or cur.has_history:
                raise ParseError(TOOL, no, raw, "`state_history:` not right after `current_state:`")
            cur.has_history = True
            continue
        h = _HISTORY_RE.fullmatch(line)
        if h is not None:
            if not cur.has_history:
                raise ParseError(TOOL, no, raw, "a history entry before `state_history:`")
            cur.history.append((int(h.group(1)), _state(h.group(2), no, raw)))
            continue
        raise ParseError(TOOL, no, raw, "not a line of an import's state (`current_state: S`, `state_history:`, "
                                        "` - [ TIME, S ]`)")
    if cur is not None:
        out.append(cur.done())
    return tuple(out)


def to_json(records: tuple[LustreImport, ...]) -> list[dict[str, Any]]:
    return [{"device": r.device, "kind": r.kind, "target": r.target, "current_state": r.current_state,
             "history": [{"time": t, "state": s} for t, s in r.history]} for r in records]
