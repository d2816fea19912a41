"""Unicast forwarding tables (LFTs) as the real tools print them: `ibroute <lid>` (infiniband-diags), its
concatenation over every switch, `dump_fts` (one block a switch, each found by a directed route), and OpenSM's
own dump (`opensm-lfts.dump`, written with log_flags 0x40 into dump_files_dir).

A block a switch:

    Unicast lids [0x0-0x1a] of switch Lid 21 guid 0x02cf5307273a6ebe (leaf-su02-r1):          ibroute
    Unicast lids [0x0-0x1a] of switch DR path slid 0; dlid 0; 0,1,21,7 guid 0x02cf... (name):  dump_fts
    Unicast lids [0-26] of switch Lid 2 guid 0x02cf531fb3c7ce14 ('leaf-su02-r0'):              OpenSM
      Lid  Out   Destination                                                    (ibroute, dump_fts)
           Port     Info
    0x0001 021 : (Channel Adapter portguid 0x02cf4815a0299951: 'sm01 mlx5_0')                ibroute, dump_fts
    0x0001 021 # Channel Adapter portguid 0x02cf4815a0299951: 'sm01 mlx5_0'                  OpenSM
    26 valid lids dumped           (ibroute, dump_fts: the LIDs listed)   26 lids dumped (OpenSM: the range's top)

Each entry: the destination LID, the port the switch sends it out of (0: the switch itself), and the
destination's kind, port GUID and node description. A destination the tool's own scan no longer finds (a LID the
switch still routes after its port went down: `(node info not available fabric scan)` from dump_fts, `(unknown node
and type)` from ibroute; tests/fixtures/ibroute/lab-port-down) is a route of kind `unknown` with no GUID or name;
`(illegal port)` (an out port the switch does not have) one of kind `illegal`. The paths of LMC > 0 (`(path #i out
of n ...)`) are not read: a ParseError says so, never a table without them. A LID the switch does not route is not
listed (OpenSM routes no spine to another spine under ftree: tests/fixtures/ibroute/lab-ftree). The footer's count
must be the block's entries: a block cut short is an error, never a shorter table. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from clusterforge.parse.errors import ParseError

TOOL = "ibroute"

__all__ = ["Route", "SwitchLft", "parse", "to_json"]

_GUID = r"0x([0-9a-fA-F]{1,16})"
_HEAD = re.compile(r"Unicast lids \[(0x[0-9a-fA-F]+|\d+)-(0x[0-9a-fA-F]+|\d+)\] of switch "
                   r"(?:Lid (\d+)|DR path (.*?)) guid " + _GUID + r" \((?:'(.*)'|(.*))\):")
_ENTRY = re.compile(r"0x([0-9a-fA-F]{4}) (\d{3}) (?::\s+\((.*)\)|#\s+(.*))")
_DEST = re.compile(r"(Channel Adapter|Switch|Router) portguid " + _GUID + r": '(.*)'")
_UNRESOLVED = {"node info not available fabric scan": "unknown", "unknown node and type": "unknown",
               "illegal port": "illegal"}
"""What the tools print for a destination they cannot name -> the route's kind."""
_FOOT = re.compile(r"(\d+) (valid )?lids dumped")
_COLUMNS = ("Lid  Out   Destination", "Port     Info")


@dataclass(frozen=True, slots=True)
class Route:
    lid: int
    port: int
    """The port the switch forwards this LID out of; 0 is the switch itself."""
    kind: str
    """Channel Adapter, Switch or Router; `unknown` where the tool's scan does not find the destination, `illegal`
    where the out port is not the switch's."""
    guid: str
    """The destination's port GUID, ``0x`` and 16 hex digits, lower case ('' when unknown)."""
    name: str
    """The destination's node description (a CA's `<host> <hca>`; '' when unknown)."""


@dataclass(frozen=True, slots=True)
class SwitchLft:
    guid: str
    """The switch's GUID, ``0x`` and 16 hex digits, lower case."""
    name: str
    lid: int | None
    """None when the tool found it by a directed route (dump_fts)."""
    routes: tuple[Route, ...]

    def port_of(self, lid: int) -> int | None:
        """The port this switch sends `lid` out of; None when it does not route it."""
        return next((r.port for r in self.routes if r.lid == lid), None)


def _guid(text: str) -> str:
    return "0x" + text.lower().rjust(16, "0")


def parse(text: str) -> tuple[SwitchLft, ...]:
    """Every switch's table, in the order printed (ibroute's, dump_fts's or OpenSM's form)."""
    lines = [ln.rstrip("\r") for ln in text.split("\n")]
    out: list[SwitchLft] = []
    head: tuple[str, str, int | None] | None = None
    top = 0  # the header's last LID: OpenSM's footer counts the range, ibroute's the LIDs it lists
    head_no = 0
    routes: list[Route] = []

    def close(no: int, raw: str, count: int | None) -> None:
        nonlocal head
        assert head is not None
        if count is not None and count != len(routes):
            raise ParseError(TOOL, no, raw, f"the footer counts {count} LIDs, the block of {head[1]} lists "
                                            f"{len(routes)}: the table is cut short")
        out.append(SwitchLft(head[0], head[1], head[2], tuple(routes)))
        head = None

    for no, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line in _COLUMNS:
            continue
        m = _HEAD.fullmatch(line)
        if m is not None:
            if head is not None:
                raise ParseError(TOOL, no, raw, f"a new table before the footer of {head[1]}'s (line {head_no})")
            lid = int(m.group(3)) if m.group(3) is not None else None
            name = m.group(6) if m.group(6) is not None else m.group(7)
            head, head_no, routes = (_guid(m.group(5)), name, lid), no, []
            top = int(m.group(2), 0)
            continue
        if head is None:
            raise ParseError(TOOL, no, raw, "not a table header (Unicast lids [..] of switch ... guid 0x... (name):)")
        m = _ENTRY.fullmatch(line)
        if m is not None:
            info = (m.group(3) if m.group(3) is not None else m.group(4)).strip()
            dest = _DEST.fullmatch(info)
            kind = _UNRESOLVED.get(info)
            if dest is None and kind is None:
                why = ("an LMC path (LMC > 0: its paths are not read)" if info.startswith("path #") else
                       "a route without its destination (kind portguid 0x...: 'name')")
                raise ParseError(TOOL, no, raw, why)
            lid = int(m.group(1), 16)
            if any(r.lid == lid for r in routes):
                raise ParseError(TOOL, no, raw, f"LID {lid} twice in the table of {head[1]}")
            if dest is not None:
                routes.append(Route(lid, int(m.group(2)), dest.group(1), _guid(dest.group(2)), dest.group(3)))
            else:
                routes.append(Route(lid, int(m.group(2)), kind or "", "", ""))
            continue
        m = _FOOT.fullmatch(line)
        if m is not None:
            if m.group(2) is None and int(m.group(1)) != top:  # OpenSM's: the range dumped
                raise ParseError(TOOL, no, raw, f"the footer counts LIDs up to {m.group(1)}, the header of {head[1]} "
                                                f"up to {top}")
            if any(r.lid > top for r in routes):
                raise ParseError(TOOL, no, raw, f"a LID above the header's range (0-{top}) in {head[1]}'s table")
            close(no, raw, int(m.group(1)) if m.group(2) else None)
            continue
        raise ParseError(TOOL, no, raw, "not a route line (0xLLLL PPP : (destination)) or a table's footer")
    if head is not None:
        raise ParseError(TOOL, len(lines), lines[-1] if lines else "",
                         f"the table of {head[1]} (line {head_no}) ends without its footer: cut short")
    if not out:
        raise ParseError(TOOL, 1, lines[0] if lines else "", "empty input: no switch's table")
    return tuple(out)


def to_json(tables: tuple[SwitchLft, ...]) -> list[dict[str, Any]]:
    return [{"guid": t.guid, "name": t.name, "lid": t.lid,
             "routes": [{"lid": r.lid, "port": r.port, "kind": r.kind, "guid": r.guid, "name": r.name}
                        for r in t.routes]}
            for t in tables]
