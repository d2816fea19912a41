"""The change plan verifier's state (day2/verify.py states the rules): what the old inventory builds
(floor_of: racks, slots, cables, hosts in service, the master SM, trunks) plus what the rules track across
steps (hosts out per rack, Lustre targets served, firmware flashed and not activated), the violation list,
and the helpers every rule group uses. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..inventory.selection import SelectionError, limit_tokens, node_names, select_nodes
from ..model.cabling import Cable
from ..model.index import Index
from ..util.hostlist import HostlistError
from .firmware import Bump, bumps, cabled_nodes
from .floor import floor_of
from .ha import Groups, groups, replaced_switches
from .inventory_diff import LEARN_FIELDS, device_places, hardware_fields, unit_heights
from .steps import ChangePlan, Step

OUT = ("drained", "out")


@dataclass(frozen=True, slots=True)
class Violation:
    step: int  # 0: the state at the end
    rule: str
    message: str

    def __str__(self) -> str:
        where = f"step {self.step}" if self.step else "end of plan"
        return f"{where}: {self.rule}: {self.message}"


class PlanRejected(Exception):
    """A plan the verifier refused: an internal error of the planner, never a plan to print."""

    def __init__(self, violations: list[Violation]):
        self.violations = violations
        super().__init__("; ".join(str(v) for v in violations[:5]))


def physical(c: Cable) -> tuple[Any, ...]:
    return (c.id, c.label, c.media, c.length_m, c.fiber_type, c.trunk, c.lane_group)


def step_arg(argv: tuple[str, ...], flag: str) -> str | None:
    """The value after `flag` in a step's command, if any."""
    if flag in argv:
        i = argv.index(flag)
        if i + 1 < len(argv):
            return argv[i + 1]
    return None


class ReplayState:
    """The state a plan is replayed on, and the helpers the rule groups share."""

    def __init__(self, plan: ChangePlan, old: Index, new: Index):
        self.plan, self.old, self.new = plan, old, new
        self.g: Groups = groups(old, new, plan.diff)
        self.new_places = device_places(new)
        self.new_cables = {c.id: c for c in new.inv.cables}
        self.violations: list[Violation] = []
        self.disrupted = {h.host for h in plan.hosts if h.disruptive}
        self.changed_hosts = {h.host for h in plan.hosts if h.change != "removed"}
        swapped = replaced_switches(plan.diff)
        self.needs_learn = swapped | {d.name for d in plan.diff.devices
                                      if d.kind in ("node", "switch") and d.change == "added"}
        self.needs_learn |= {d.name for d in plan.diff.devices if d.kind == "node" and d.change == "changed"
                             and any(f in LEARN_FIELDS for f in d.fields)}
        if self.needs_learn:  # only what has a cable (OpenSM names what it sees)
            cabled = {e.device for c in new.inv.cables for e in (c.a, c.b)}
            self.needs_learn &= cabled
        self.swapped = swapped
        self.hw_changed = {d.name for d in plan.diff.devices if d.kind == "node" and d.change == "changed"
                           and hardware_fields(d.fields)}
        self.cooling = {d.name for d in plan.diff.devices if d.kind == "rack" and d.change == "changed"
                        and "cooling" in d.fields}
        self.new_heights = unit_heights(new)
        self.s = floor_of(old, self.g.master)
        self.panel_trunks: dict[str, set[str]] = {}  # panel -> trunks ending at it (old or new)
        for t in (*old.inv.trunks, *new.inv.trunks):
            for panel in (t.a_panel, t.b_panel):
                self.panel_trunks.setdefault(panel, set()).add(t.id)
        self.new_spot = {r.name: (r.row, r.position) for r in new.inv.racks}  # where each rack stands
        self.n = 0
        self.out_compute: set[str] = set()  # compute drained or out now
        self.out_per_rack: dict[str, int] = {}
        # FIRMWARE: the bumps, what each host and switch still needs, what is flashed and not yet activated
        self.fw: dict[str, Bump] = {b.model: b for b in bumps(old, new)}
        self.fw_need: set[tuple[str, str]] = {(t, b.model) for b in self.fw.values() for t in b.targets}
        self.fw_pending: dict[str, set[str]] = {}  # host or switch -> models flashed, not activated
        self.fw_open: str | None = None  # the switch flashed and not yet validated
        switches = {t for b in self.fw.values() if b.kind == "switches" for t in b.targets}
        self.fw_cabled = cabled_nodes(old, switches) if switches else {}
        # HA (Lustre): which server serves each target now (as built: its own)
        self.served: dict[str, str] = {t: srv for srv, ts in self.g.targets.items() for t in ts}
        self.primary: dict[str, str] = dict(self.served)

    def bad(self, rule: str, message: str) -> None:
        self.violations.append(Violation(self.n, rule, message))

    def _is_out(self, host: str) -> bool:
        return self.s.host.get(host) in (*OUT, "new")

    def _counted_back(self, host: str) -> None:
        if host in self.out_compute:
            self.out_compute.discard(host)
            self.out_per_rack[self.g.compute_rack[host]] -= 1

    def _limit(self, step: Step, nodes_only: bool) -> list[str] | None:
        """The hosts a step's `--limit` names, read as the command reads it: `deploy` through the
        inventory's selection (names, racks, roles, units, ranges of them), `validate` as host names or
        ranges of them; a PHASE violation (and no hosts) when it names nothing the new inventory has."""
        value = step_arg(step.argv, "--limit")
        if value is None:
            return None
        try:  # an empty --limit selects no host: the command refuses it, and so does the plan
            if nodes_only:
                return node_names(self.new, value)
            return select_nodes(self.new, limit_tokens(value))
        except (HostlistError, SelectionError) as exc:
            self.bad("PHASE", f"{step.phase} step's {exc}")
            return []
