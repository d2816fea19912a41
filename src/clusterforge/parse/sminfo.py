"""``sminfo`` (infiniband-diags): the master subnet manager as the local port's SM LID answers.

One line: ``sminfo: sm lid 4 sm guid 0xc42a1030000100b, activity count 220 priority 0 state 3
SMINFO_MASTER``. When no subnet manager answers, sminfo prints nothing on stdout and exits non-zero
(``sminfo: iberror: failed: query`` on stderr): that is not output to parse (the caller knows the exit
status). Self-contained (only ParseError): `ib-health` embeds this module's source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clusterforge.parse.errors import ParseError

TOOL = "sminfo"

__all__ = ["SmInfo", "parse"]

_LINE_RE = re.compile(r"sminfo: sm lid (\d+) sm guid 0x([0-9a-fA-F]{1,16}), activity count (\d+) "
                      r"priority (\d+) state (\d+) (SMINFO_[A-Z]+)")


@dataclass(frozen=True, slots=True)
class SmInfo:
    lid: int
    guid: str
    """``0x`` and 16 hex digits, lower case."""
    activity_count: int
    priority: int
    state: int
    """3 master, 2 standby, 1 discovering, 0 not active (IBTA SMInfo)."""
    state_name: str

    @property
    def master(self) -> bool:
        return self.state == 3


def parse(text: str) -> SmInfo:
    lines = [ln.rstrip("\r") for ln in text.split("\n")]
    found: SmInfo | None = None
    for no, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        m = _LINE_RE.fullmatch(line)
        if m is None:
            raise ParseError(TOOL, no, raw, "not an sminfo line (sminfo: sm lid N sm guid 0x..., activity count N "
                                            "priority N state N SMINFO_...)")
        if found is not None:
            raise ParseError(TOOL, no, raw, "a second sminfo line: sminfo prints one")
        lid, guid, count, prio, state, name = m.groups()
        found = SmInfo(int(lid), "0x" + guid.lower().rjust(16, "0"), int(count), int(prio), int(state), name)
    if found is None:
        raise ParseError(TOOL, 1, "", "empty input: sminfo prints one line when a subnet manager answers")
    return found
