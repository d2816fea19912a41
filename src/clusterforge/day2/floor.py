"""The floor as the plan verifier (day2/verify.py) replays it: racks, the device in each slot, the cables
plugged, each host's service state, the trunks laid, the master subnet manager. Pure.

`floor_of(old)` is the state the old inventory builds; the verifier's steps act on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..model.cabling import Cable
from ..model.index import Index, PortKey
from .inventory_diff import device_places, unit_heights


@dataclass
class Floor:
    racks: dict[str, dict[str, Any]]  # rack -> settings
    at: dict[str, tuple[str, int]]  # device -> (rack, lowest U)
    slot: dict[tuple[str, int], str]  # every (rack, U) a device takes -> the device
    height: dict[str, int]  # units each standing device takes from its lowest U
    plugged: dict[frozenset[PortKey], Cable]
    by_id: dict[str, frozenset[PortKey]]
    port_busy: dict[PortKey, str]
    busy_on: dict[str, set[PortKey]]  # device -> its ports with a cable in them
    host: dict[str, str]  # in, drained, out, new
    trunks: set[str]
    master: str | None
    learned: set[str] = field(default_factory=set)
    deployed: set[str] = field(default_factory=set)
    validated: set[str] = field(default_factory=set)  # hosts validated since their last change
    commissioned: set[str] = field(default_factory=set)
    hw_done: set[str] = field(default_factory=set)  # nodes whose hardware change was made
    cabled_since: dict[str, int] = field(default_factory=dict)  # device -> cables plugged into it


def floor_of(old: Index, master: str | None) -> Floor:
    """The floor as `old` builds it: every node in service, every cable plugged, `master` the master SM."""
    plugged: dict[frozenset[PortKey], Cable] = {}
    by_id: dict[str, frozenset[PortKey]] = {}
    busy: dict[PortKey, str] = {}
    for c in old.inv.cables:  # one pass: 50,000 cables at 2,048 nodes
        ka, kb = c.a.key, c.b.key
        ends = frozenset((ka, kb))
        plugged[ends] = c
        by_id[c.id] = ends
        busy[ka] = busy[kb] = c.id
    busy_on: dict[str, set[PortKey]] = {}
    for k in busy:
        busy_on.setdefault(k[0], set()).add(k)
    places = device_places(old)
    height = unit_heights(old)
    return Floor(
        racks={r.name: r.model_dump(mode="json") for r in old.inv.racks},
        at=places, slot={(p[0], u): d for d, p in places.items() for u in range(p[1], p[1] + height.get(d, 1))},
        height={d: height.get(d, 1) for d in places},
        plugged=plugged, by_id=by_id, port_busy=busy, busy_on=busy_on,
        host={n: "in" for n in old.nodes}, trunks=set(old.trunks), master=master,
    )
