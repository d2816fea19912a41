"""The lab's real forwarding tables (tests/fixtures/ibroute/: OpenSM over ibsim under minhop, ftree and updn), and
CONSTRUCTED edits of them for the tests of validate/unrouted.py and the finding ids."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from clusterforge.model.index import Index
from clusterforge.parse import ibroute
from clusterforge.parse.ibroute import SwitchLft
from clusterforge.validate.routes import uplinks

FIX = Path(__file__).resolve().parent / "fixtures" / "ibroute"
ENGINES = ("minhop", "ftree", "updn")


def tables(engine: str) -> tuple[SwitchLft, ...]:
    return ibroute.parse((FIX / f"lab-{engine}" / "dump_fts.txt").read_text(encoding="utf-8"))


def around(index: Index, tables: tuple[SwitchLft, ...], cid: str) -> tuple[SwitchLft, ...]:
    """CONSTRUCTED from the capture: no route out of either end of uplink `cid` (the lower end's routes moved to
    its next up-port, the upper end's dropped: that spine reaches the leaf no other way in two tiers)."""
    cable = index.cables[cid]
    ends = {cable.a.device: cable.a.port, cable.b.device: cable.b.port}
    low = cable.a.device if index.switches[cable.a.device].role == "leaf" else cable.b.device
    sibling = next(c for c in uplinks(index) if c != cid and low in (index.cables[c].a.device,
                                                                     index.cables[c].b.device))
    s = index.cables[sibling]
    other = s.a.port if s.a.device == low else s.b.port
    out = []
    for t in tables:
        if t.name in ends:
            port = ends[t.name]
            moved = [dataclasses.replace(r, port=other) if r.port == port else r for r in t.routes] if t.name == low \
                else [r for r in t.routes if r.port != port]
            t = dataclasses.replace(t, routes=tuple(moved))
        out.append(t)
    return tuple(out)


def dump(t: SwitchLft) -> str:
    """A table back in ibroute's words (CONSTRUCTED: the capture's blocks with the edited routes)."""
    rows = "".join(f"0x{r.lid:04x} {r.port:03d} : ({r.kind} portguid {r.guid}: '{r.name}')\n" for r in t.routes)
    return (f"Unicast lids [0x0-0x{max((r.lid for r in t.routes), default=0):x}] of switch DR path slid 0; dlid 0; "
            f"0 guid {t.guid} ({t.name}):\n  Lid  Out   Destination\n       Port     Info \n{rows}"
            f"{len(t.routes)} valid lids dumped \n")

