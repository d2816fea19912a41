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
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from clusterforge.parse.errors import ParseError

TOOL = "ibroute"

__all__ = ["NO_ROUTE", "Dest", "Lft", "Route", "SwitchLft", "Tables", "compact", "parse", "read", "to_json"]

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


@dataclass(frozen=True, slots=True)
class Dest:
    """A destination as a table names it."""

    kind: str
    guid: str
    name: str


MAX_DESTS = 4 * 0xBFFF
"""The most distinct destination texts read (a subnet has 0xbfff unicast LIDs, each named once, a few of them
unknown to a tool's scan): an input past it is no tables, and its names are not kept without bound."""
NO_ROUTE = 0xFF
"""In a compact table: the switch does not route this LID (no port is numbered 255)."""


@dataclass(frozen=True)
class Lft:
    """One switch's table, compact: a byte a LID (what a 2,048-node fabric's 28 million lines fit in)."""

    guid: str
    name: str
    lid: int | None
    ports: bytes
    """ports[LID]: the port the switch sends that LID out of (0: itself), NO_ROUTE where it lists none."""
    other: dict[int, Dest]
    """This table's destinations named otherwise than by the first table that lists the LID (`Tables.dests`):
    a table of another sweep, or one the tool's scan names differently. Usually empty."""

    @property
    def count(self) -> int:
        """The LIDs routed."""
        return len(self.ports) - self.ports.count(NO_ROUTE)


@dataclass(frozen=True)
class Tables:
    """Every switch's table as `read` returns them."""

    switches: tuple[Lft, ...]
    dests: dict[int, Dest]
    """Each LID's destination, as the first table that lists it names it."""
    first: dict[int, str]
    """Each LID -> the name of that first table."""


def _guid(text: str) -> str:
    return "0x" + text.lower().rjust(16, "0")


class _Sink:
    """What `_scan` builds: the record form (`parse`) or the compact one (`read`)."""

    def begin(self, guid: str, name: str, lid: int | None, top: int) -> None: ...

    def route(self, lid: int, port: int, dest: Dest) -> None: ...

    def end(self) -> None: ...


def _scan(lines: Iterable[str], sink: _Sink) -> int:
    """Read the tables of `lines` into `sink`, checking every line as it comes (ParseError with its number);
    the number of tables read."""
    head: tuple[str, int] | None = None  # the table's switch name and header line
    top = 0  # the header's last LID: OpenSM's footer counts the range, ibroute's the LIDs it lists
    seen = bytearray()
    listed = 0
    above = False
    tables = 0
    dests: dict[str, Dest] = {}  # the destination text -> its Dest: the same few thousand texts in every table
    no, raw = 0, ""
    for no, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line in _COLUMNS:
            continue
        if head is not None and line[:2] == "0x":
            m = _ENTRY.fullmatch(line)
            if m is not None:
                info = m.group(3) if m.group(3) is not None else m.group(4)
                dest = dests.get(info)
                if dest is None:
                    if len(dests) >= MAX_DESTS:
                        raise ParseError(TOOL, no, raw, f"more than {MAX_DESTS} distinct destinations: more than "
                                                        "a subnet's LIDs name, not tables")
                    dest = dests[info] = _dest(no, raw, info.strip())
                lid, port = int(m.group(1), 16), int(m.group(2))
                if lid > top:
                    above = True
                elif seen[lid]:
                    raise ParseError(TOOL, no, raw, f"LID {lid} twice in the table of {head[0]}")
                else:
                    seen[lid] = 1
                    if port >= NO_ROUTE:
                        raise ParseError(TOOL, no, raw, f"out port {port}: a switch has ports 0 to 254")
                    sink.route(lid, port, dest)
                listed += 1
                continue
        m = _HEAD.fullmatch(line)
        if m is not None:
            if head is not None:
                raise ParseError(TOOL, no, raw, f"a new table before the footer of {head[0]}'s (line {head[1]})")
            own = int(m.group(3)) if m.group(3) is not None else None
            name = m.group(6) if m.group(6) is not None else m.group(7)
            top = int(m.group(2), 0)
            if top > 0xBFFF:
                raise ParseError(TOOL, no, raw, f"LIDs up to {top}: a unicast LID is at most 0xbfff")
            head, seen, listed, above = (name, no), bytearray(top + 1), 0, False
            sink.begin(_guid(m.group(5)), name, own, top)
            continue
        if head is None:
            raise ParseError(TOOL, no, raw, "not a table header (Unicast lids [..] of switch ... guid 0x... (name):)")
        m = _FOOT.fullmatch(line)
        if m is not None:
            if m.group(2) is None and int(m.group(1)) != top:  # OpenSM's: the range dumped
                raise ParseError(TOOL, no, raw, f"the footer counts LIDs up to {m.group(1)}, the header of {head[0]} "
                                                f"up to {top}")
            if above:
                raise ParseError(TOOL, no, raw, f"a LID above the header's range (0-{top}) in {head[0]}'s table")
            if m.group(2) is not None and int(m.group(1)) != listed:
                raise ParseError(TOOL, no, raw, f"the footer counts {m.group(1)} LIDs, the block of {head[0]} "
                                                f"lists {listed}: the table is cut short")
            sink.end()
            head = None
            tables += 1
            continue
        raise ParseError(TOOL, no, raw, "not a route line (0xLLLL PPP : (destination)) or a table's footer")
    if head is not None:
        raise ParseError(TOOL, no, raw, f"the table of {head[0]} (line {head[1]}) ends without its footer: cut short")
    if not tables:
        raise ParseError(TOOL, 1, raw if no <= 1 else "", "empty input: no switch's table")
    return tables


def _dest(no: int, raw: str, info: str) -> Dest:
    dest = _DEST.fullmatch(info)
    if dest is not None:
        return Dest(dest.group(1), _guid(dest.group(2)), dest.group(3))
    kind = _UNRESOLVED.get(info)
    if kind is not None:
        return Dest(kind, "", "")
    why = ("an LMC path (LMC > 0: its paths are not read)" if info.startswith("path #") else
           "a route without its destination (kind portguid 0x...: 'name')")
    raise ParseError(TOOL, no, raw, why)


class _Records(_Sink):
    def __init__(self) -> None:
        self.out: list[SwitchLft] = []
        self.head: tuple[str, str, int | None] = ("", "", None)
        self.routes: list[Route] = []

    def begin(self, guid: str, name: str, lid: int | None, top: int) -> None:
        self.head, self.routes = (guid, name, lid), []

    def route(self, lid: int, port: int, dest: Dest) -> None:
        self.routes.append(Route(lid, port, dest.kind, dest.guid, dest.name))

    def end(self) -> None:
        self.out.append(SwitchLft(*self.head, tuple(self.routes)))


class _Compact(_Sink):
    def __init__(self) -> None:
        self.out: list[Lft] = []
        self.dests: dict[int, Dest] = {}
        self.first: dict[int, str] = {}
        self.head: tuple[str, str, int | None] = ("", "", None)
        self.ports = bytearray()
        self.other: dict[int, Dest] = {}

    def begin(self, guid: str, name: str, lid: int | None, top: int) -> None:
        self.head, self.ports, self.other = (guid, name, lid), bytearray([NO_ROUTE]) * (top + 1), {}

    def route(self, lid: int, port: int, dest: Dest) -> None:
        self.ports[lid] = port
        known = self.dests.get(lid)
        if known is None:
            self.dests[lid] = dest
            self.first[lid] = self.head[1]
        elif known is not dest and known != dest:
            self.other[lid] = dest

    def end(self) -> None:
        self.out.append(Lft(*self.head, bytes(self.ports), self.other))


def parse(text: str) -> tuple[SwitchLft, ...]:
    """Every switch's table, in the order printed (ibroute's, dump_fts's or OpenSM's form), a record a route."""
    sink = _Records()
    _scan((ln.rstrip("\r") for ln in text.split("\n")), sink)
    return tuple(sink.out)


def read(lines: Iterable[str]) -> Tables:
    """The same tables, compact, from lines as they come (a file read as a stream: 2 GB of OpenSM's dump needs
    no 2 GB of text in memory)."""
    sink = _Compact()
    _scan(lines, sink)
    return Tables(tuple(sink.out), sink.dests, sink.first)


def compact(tables: Iterable[SwitchLft]) -> Tables:
    """Records (`parse`) in the compact form (`read`)."""
    sink = _Compact()
    for t in tables:
        sink.begin(t.guid, t.name, t.lid, max((r.lid for r in t.routes), default=0))
        for r in t.routes:
            sink.route(r.lid, r.port, Dest(r.kind, r.guid, r.name))
        sink.end()
    return Tables(tuple(sink.out), sink.dests, sink.first)


def to_json(tables: tuple[SwitchLft, ...]) -> list[dict[str, Any]]:
    return [{"guid": t.guid, "name": t.name, "lid": t.lid,
             "routes": [{"lid": r.lid, "port": r.port, "kind": r.kind, "guid": r.guid, "name": r.name}
                        for r in t.routes]}
            for t in tables]
