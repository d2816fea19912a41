"""Where generated switches and patch panels go: racks, rack units, and the cable runs between them.

Placement rules (docs/planner.md has the long form):

* Leaves: the `rails` leaves of a scalable unit go into a *network rack*, a rack whose
  name ends with `fabric.network_rack_suffix` (default `-net`), in the row of the SU's
  first node: each leaf into the one nearest (by position) to that node's rack that still
  has room, the lower position on a tie; when none has room (or the row has none), into
  the first node's rack itself, else the nearest other rack of that row with room.
* Spines and cores: the racks of `fabric.switch_row` in position order, filled one after
  the other in the order the switches are created (cores, then each pod's spines).
* Room: switches take at most half of the units that nodes leave free in a rack, and no
  more power than the rack's limit (power budget or cooling density, less the nodes in
  it); the other half is kept for patch panels. Switches fill free units from the bottom (U1 up), patch panels from
  the top down. Only nodes are avoided: switches and panels declared by hand are not, and
  the U-overlap check reports any collision after the plan is merged.

Everything is allocated in the planner's growth order, so a plan for more nodes places
every existing switch and panel exactly where the smaller plan did.
"""

from __future__ import annotations

from ..catalog import Catalog
from ..model.index import Index
from ..model.site import Rack
from .design import SwitchType
from .errors import PlanError
from .geometry import Geometry


class Floor:
    """Rack occupancy and distances for one inventory; mutated as things are placed."""

    def __init__(self, index: Index, cat: Catalog, suffix: str, switch_row: str | None) -> None:
        inv = index.inv
        self.site = inv.site
        self.rows = {r.name: r.index for r in inv.site.rows}
        self.racks: dict[str, Rack] = {r.name: r for r in inv.racks}
        self.taken: dict[str, set[int]] = {name: set() for name in self.racks}
        self.load_kw: dict[str, float] = dict.fromkeys(self.racks, 0.0)
        self.switch_units: dict[str, int] = dict.fromkeys(self.racks, 0)
        self.node_units: dict[str, int] = dict.fromkeys(self.racks, 0)
        self._limit = {r.name: _limit_kw(r, cat) for r in inv.racks}
        for node in inv.nodes:
            hw = index.hardware[node.name]
            if node.rack in self.taken:
                self.taken[node.rack].update(range(node.u, node.u + hw.u_height))
                self.node_units[node.rack] = len(self.taken[node.rack])
                self.load_kw[node.rack] += hw.power_kw
        self.network: dict[str, list[Rack]] = {}
        for rack in sorted(inv.racks, key=lambda r: r.position):
            if rack.name.endswith(suffix):
                self.network.setdefault(rack.row, []).append(rack)
        self.suffix = suffix
        self.switch_row = switch_row
        self._upper: list[Rack] | None = None
        self._cursor = 0
        self._lengths: dict[tuple[str, int, str, int], float] = {}
        self._geometry = Geometry(inv.site, self.rows)

    # -- switches -------------------------------------------------------------------------
    def _free(self, rack: Rack, height: int) -> int | None:
        taken = self.taken[rack.name]
        for u in range(1, rack.u_height - height + 2):
            if all(x not in taken for x in range(u, u + height)):
                return u
        return None

    def _room(self, rack: Rack, st: SwitchType) -> bool:
        units = self.switch_units[rack.name] + st.ru
        power = self.load_kw[rack.name] + st.power_w / 1000
        return (units <= (rack.u_height - self.node_units[rack.name]) // 2
                and power <= self._limit[rack.name] + 1e-9 and self._free(rack, st.ru) is not None)

    def _put(self, rack: Rack, st: SwitchType) -> int:
        u = self._free(rack, st.ru)
        assert u is not None  # _room said so
        self.taken[rack.name].update(range(u, u + st.ru))
        self.switch_units[rack.name] += st.ru
        self.load_kw[rack.name] += st.power_w / 1000
        return u

    def free_at(self, rack: str, u: int, height: int) -> bool:
        """Whether units u .. u+height-1 of `rack` exist and nothing placed so far takes them."""
        r = self.racks.get(rack)
        taken = self.taken.get(rack)
        return (r is not None and taken is not None and u >= 1 and u + height - 1 <= r.u_height
                and all(x not in taken for x in range(u, u + height)))

    def keep(self, rack: str, u: int, height: int, power_w: float = 0.0, switch: bool = True) -> None:
        """Mark a frozen switch (or patch panel) kept where it is (free_at said so)."""
        self.taken[rack].update(range(u, u + height))
        if switch:
            self.switch_units[rack] += height
            self.load_kw[rack] += power_w / 1000

    def place_leaves(self, first_node_rack: str, st: SwitchType, count: int, unit: str) -> list[tuple[str, int]]:
        """Rack and unit of each of the `count` leaves of `unit` (`scalable unit 3`), nearest network rack first."""
        home = self.racks.get(first_node_rack)
        if home is None:
            raise PlanError(f"{unit}: its first node's rack {first_node_rack!r} is not declared")
        near = sorted(self.network.get(home.row, []), key=lambda r: (abs(r.position - home.position), r.position))
        others = sorted((r for r in self.racks.values() if r.row == home.row and r.name != home.name
                         and r not in near), key=lambda r: (abs(r.position - home.position), r.position))
        order = [*near, home, *others]
        out: list[tuple[str, int]] = []
        for _ in range(count):
            rack = next((r for r in order if self._room(r, st)), None)
            if rack is None:
                raise PlanError(
                    f"no room for the {count} leaves of {unit} in row {home.row} (switches "
                    f"take at most half of the units nodes leave free in a rack, within its power limit)",
                    [f"add a rack whose name ends with {self.suffix!r} to row {home.row}"])
            out.append((rack.name, self._put(rack, st)))
        return out

    def place_upper(self, st: SwitchType, name: str) -> tuple[str, int]:
        """Next room for a spine or core in the switch row."""
        racks = self._upper_racks()
        while self._cursor < len(racks):
            rack = racks[self._cursor]
            if self._room(rack, st):
                return rack.name, self._put(rack, st)
            self._cursor += 1
        raise PlanError(f"switch row {self.switch_row} is full at {name}: its {len(racks)} rack(s) hold no more "
                        f"{st.model} switches (half the units nodes leave free, within the power limit)",
                        [f"add racks to row {self.switch_row}"])

    def _upper_racks(self) -> list[Rack]:
        if self._upper is None:
            if self.switch_row is None:
                raise PlanError("fabric.switch_row is not set: name the row that holds the spine and core "
                                "switches", [f"switch_row: {r}" for r in sorted(self.rows)])
            if self.switch_row not in self.rows:
                raise PlanError(f"fabric.switch_row: unknown row {self.switch_row!r}",
                                [f"switch_row: {r}" for r in sorted(self.rows)])
            self._upper = sorted((r for r in self.racks.values() if r.row == self.switch_row),
                                 key=lambda r: r.position)
            if not self._upper:
                raise PlanError(f"switch row {self.switch_row} has no racks", [f"add racks to row {self.switch_row}"])
        return self._upper

    # -- patch panels ---------------------------------------------------------------------
    def place_panel(self, rack_name: str) -> int:
        rack = self.racks[rack_name]
        taken = self.taken[rack_name]
        for u in range(rack.u_height, 0, -1):
            if u not in taken:
                taken.add(u)
                return u
        raise PlanError(f"rack {rack_name} has no free unit left for an MPO patch panel",
                        ["fewer switches per rack: add racks to the switch row"])

    # -- distances -------------------------------------------------------------------------
    def length(self, ra: str, ua: int, rb: str, ub: int) -> float:
        key = (ra, ua, rb, ub)
        value = self._lengths.get(key)
        if value is None:
            value = self._geometry.length(self.racks[ra], ua, self.racks[rb], ub)
            self._lengths[key] = value
        return value

    def row_of(self, rack: str) -> str:
        return self.racks[rack].row


def _limit_kw(rack: Rack, cat: Catalog) -> float:
    limit = rack.max_density_kw or cat.cooling[rack.cooling].max_kw
    if rack.power_budget_kw is not None:
        limit = min(limit, rack.power_budget_kw)
    return limit
