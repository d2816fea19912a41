"""The change planner's state (day2/changeplan.py states the method): the two inventories, the diff, the
tasks and interrupted hosts found so far, the firmware bumps, and where things are. Pure."""

from __future__ import annotations

from collections.abc import Callable

from ..model.cabling import Cable
from ..model.index import Index, PortKey
from ..model.place_text import port_text
from .firmware import Bump, bumps, refuse_downgrades
from .ha import Groups, changed_trunks, groups, moved_racks, relaid_trunks, replaced_switches
from .host_diff import HostChange
from .inventory_diff import InventoryDiff, device_places, unit_heights
from .steps import Phase
from .waves import Task

BEFORE_TRUNKS: tuple[Phase, ...] = ("unplug", "remove", "install")
AFTER_TRUNKS: tuple[Phase, ...] = ("plug", "relabel", "commission")
INTERRUPTING = ("moved", "replaced", "rerouted", "removed")
RACK_DRAIN_FIELDS = ("cooling",)
Emit = Callable[..., None]


class PlannerState:
    """What the planner's parts share: built once from the two inventories and their diff."""

    def __init__(self, old: Index, new: Index, env: str, diff: InventoryDiff, hosts: tuple[HostChange, ...]):
        self.old, self.new, self.env, self.diff, self.hosts = old, new, env, diff, hosts
        self.tasks: list[Task] = []
        self.reasons: dict[str, list[str]] = {}  # host -> why it is interrupted, in the order found
        self.warnings: list[str] = []
        self.learn: set[str] = set()  # devices whose GUIDs must be learned
        self.g: Groups = groups(old, new, diff)
        moved = {d.name for d in diff.devices if d.change == "moved" and d.kind in ("node", "switch")}
        self.swapped = replaced_switches(diff)
        self.places_old = device_places(old)
        self.places_new = device_places(new)
        self.rolled = moved_racks(diff)  # racks that move with their devices in them
        self.inside = {name: place[0] for name, place in self.places_old.items() if place[0] in self.rolled}
        self.relaid = relaid_trunks(old, diff)  # trunks that change or whose panel moves: pulled and laid again
        changed = changed_trunks(diff)
        self.trunk_fields = {d.name: d.fields for d in diff.devices if d.kind == "trunk" and d.name in changed}
        self.rehomed = moved | self.swapped | set(self.inside)  # devices whose every cable comes out and goes back
        self.placed = {d.name for d in diff.devices if d.kind in ("node", "switch", "patch_panel")
                       and (d.change != "changed" or d.name in self.swapped)} | set(self.inside)
        self._heights: dict[int, dict[str, int]] = {}
        self.fw = bumps(old, new)  # firmware pins that change (day2/firmware.py)
        refuse_downgrades(new, self.fw)
        self.fw_hca = [b for b in self.fw if b.kind == "hcas"]
        self.fw_switch: dict[str, Bump] = {t: b for b in self.fw if b.kind == "switches" for t in b.targets}
        self.fw_done: set[tuple[str, str]] = set()  # (host, model) flashed by an earlier wave
        self.wave_hosts: set[str] = set()  # hosts interrupted by the work packed into waves (not a switch's flash)

    def _rack_of(self, device: str, index: Index) -> str:
        place = (self.places_old if index is self.old else self.places_new).get(device)
        return place[0] if place is not None else "?"

    def _where(self, key: PortKey, index: Index) -> str:
        device, hca, port = key
        at = (self.places_old if index is self.old else self.places_new).get(device)
        place = f" [{at[0]} U{at[1]}]" if at is not None else ""
        return f"{device} {hca}/{port}{place}" if hca else f"{device} port {port}{place}"

    def _cable_text(self, c: Cable, index: Index) -> str:
        label = f" ({c.label})" if c.label else ""
        route = f", trunk {c.trunk} lanes {c.lane_group}" if c.trunk else ""
        return (f"{self._where(c.a.key, index)} - {self._where(c.b.key, index)}{label}: "
                f"{c.media} {c.length_m:g} m{' ' + c.fiber_type if c.fiber_type else ''}{route}")

    def _slots(self, device: str, place: tuple[str, int], index: Index) -> tuple[str, ...]:
        """Every rack unit the device takes at `place` (a multi-U device shares each with what overlaps it)."""
        heights = self._heights.get(id(index))
        if heights is None:
            heights = self._heights[id(index)] = unit_heights(index)
        return tuple(f"slot:{place[0]}/{u}" for u in range(place[1], place[1] + heights.get(device, 1)))

    def _interrupt(self, host: str, why: str) -> None:
        reasons = self.reasons.setdefault(host, [])
        if why not in reasons:
            reasons.append(why)

    def _task(self, phase: Phase, rack: str | None, subject: str, action: str, hosts: set[str] | None = None,
              keys: tuple[str, ...] = (), last: bool = False) -> None:
        self.tasks.append(Task(phase, rack, subject, action, frozenset(hosts or ()), keys, last))

    def _cable_keys(self, c: Cable, index: Index) -> tuple[str, ...]:
        keys = [f"port:{port_text(c.a.key)}", f"port:{port_text(c.b.key)}"]
        keys += [f"dev:{d}" for d in (c.a.device, c.b.device) if d in self.placed]
        if c.trunk:
            keys.append(f"trunk:{c.trunk}")
        return tuple(keys)

    def _nodes_on(self, c: Cable, index: Index) -> set[str]:
        return {e.device for e in (c.a, c.b) if e.device in index.nodes}

    def _one_rack(self, hosts: list[str]) -> str | None:
        racks = {self._rack_of(h, self.new) for h in hosts}
        return racks.pop() if len(racks) == 1 else None
