"""The lab's real forwarding tables (tests/fixtures/ibroute/: OpenSM over ibsim under minhop, ftree and updn), and
CONSTRUCTED edits of them for the tests of validate/unrouted.py and the finding ids."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from clusterforge.model.index import Index
from clusterforge.parse import ibroute
from clusterforge.parse.ibroute import SwitchLft

FIX = Path(__file__).resolve().parent / "fixtures" / "ibroute"
ENGINES = ("minhop", "ftree", "updn")


def tables(engine: str) -> tuple[SwitchLft, ...]:
    return ibroute.parse((FIX / f"lab-{engine}" / "dump_fts.txt").read_text(encoding="utf-8"))


def around(index: Index, tables: tuple[SwitchLft, ...], cid: str) -> tuple[SwitchLft, ...]:
    """CONSTRUCTED from the capture: no route out of either end of uplink `cid`, each end's routes moved to a
    sibling as OpenSM moves them when the link goes (tests/fixtures/ibroute/lab-uplink-down, real): the lower end's
    to its next up-port, the upper end's to another of its links to that switch, else to its next cabled port."""
    cable = index.cables[cid]
    low, high = (cable.a, cable.b) if index.switches[cable.a.device].role == "leaf" else (cable.b, cable.a)

    def sibling(end: Any, prefer: str | None) -> int:
        others = [(c.a if c.a.device == end.device else c.b, c.b if c.a.device == end.device else c.a)
                  for c in index.inv.cables if c.id != cid and c.a.hca is None and c.b.hca is None
                  and end.device in (c.a.device, c.b.device)]
        same = [mine.port for mine, far in others if far.device == prefer]
        up = [mine.port for mine, far in others if index.switches[far.device].role != "leaf"]
        return (same or up or [mine.port for mine, _far in others])[0]

    moves = {low.device: (low.port, sibling(low, None)),
             high.device: (high.port, sibling(high, low.device))}
    out = []
    for t in tables:
        if t.name in moves:
            port, other = moves[t.name]
            t = dataclasses.replace(t, routes=tuple(dataclasses.replace(r, port=other) if r.port == port else r
                                                    for r in t.routes))
        out.append(t)
    return tuple(out)


def dump(t: SwitchLft) -> str:
    """A table back in ibroute's words (CONSTRUCTED: the capture's blocks with the edited routes)."""
    rows = "".join(f"0x{r.lid:04x} {r.port:03d} : ({r.kind} portguid {r.guid}: '{r.name}')\n" for r in t.routes)
    return (f"Unicast lids [0x0-0x{max((r.lid for r in t.routes), default=0):x}] of switch DR path slid 0; dlid 0; "
            f"0 guid {t.guid} ({t.name}):\n  Lid  Out   Destination\n       Port     Info \n{rows}"
            f"{len(t.routes)} valid lids dumped \n")

