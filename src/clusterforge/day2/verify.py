"""The plan verifier: replay a change plan step by step on a model of the floor, the fabric and the
hosts' service state, and prove it safe and complete. Pure.

The state starts as the old inventory builds it: racks (and their settings), the device in each
(rack, U) slot, the cables plugged (by their two ports), every node in service, the master
subnet manager (highest priority), the trunks laid. Each step acts on it, and must be allowed:

* SLOT: a device is installed only into an empty slot of a rack that stands, after it was
  taken out of wherever it was; a rack is taken out only once empty.
* DRAIN: a host is drained or out before any of its cables is unplugged or re-patched, before
  it is taken out of its rack or its hardware changes, and before a deploy that disrupts it
  (host_diff.py); the whole rack's hosts before its cooling changes.
* CABLE: a cable is unplugged only from where it is plugged; it is plugged only into free ports
  of devices that stand where the new inventory puts them (so every cable of a moved device
  is unplugged before it is removed and plugged after it is installed), over a trunk that is laid.
  A trunk is pulled (a `trunks` step whose action starts "pull the MPO-24 trunk") only while it
  is laid and no cable is patched over it; a patch panel is taken out, or its rack moves, only
  once every trunk to it is pulled (so a trunk is never pulled after its panel is gone).
* HA: subnet managers go out one at a time and never the master (a standby takes over first,
  `handover`); Lustre servers one per failover pair, each serving no target when it goes out (its
  partner took them over: `failover`, the partner in service) and its targets back on it by the end
  (`failback`, once it is in service again); compute within `deploy.max_drain` per rack and cluster,
  unless the drained nodes are one indivisible piece of work (day2/ha.py).
* LEARN: GUIDs of new hardware are learned once it is cabled, and before any OpenSM file
  (which names them) is pushed.
* RESUME: a host is resumed (or returned) only after a validation that covers it, run after
  its last change, and after its rack's commissioning when its cooling changed.
* FIRMWARE: a firmware bump (day2/firmware.py) flashes only hosts drained or out, at the pin's new version,
  a downgrade only where the new inventory allows it (`firmware.allow_downgrade`, and the flash says
  `--allow-downgrade`); each flashed card's firmware is activated as the catalog says (`mlxfwreset`, or a
  reboot) before a validation covers its host; switches one at a time (a second is flashed only once the
  first is validated), each with every node cabled to it out of service, by hand (`upgrade`) when its OS
  flashes it; at the end every host and switch of the bump is flashed and activated.
* HOOK: a drain or resume step runs the new inventory's hook (`deploy.reboot.drain` / `.resume`) for
  exactly the hosts it names: one host with a `{host}` hook, its hostlist with a `{hosts}` one
  (model/hooks.py); a step whose command is another one, or names other hosts, is refused.
* PARALLEL: a parallel group (steps that run at the same time) is one run of consecutive machine steps
  of one phase: drain or resume hooks of distinct compute nodes, or deploys of disjoint hosts.
* END: the state at the end is the new inventory: racks and their settings, every device in its
  slot, exactly its cables, every host in service, the learned hardware, the trunks, every
  changed host deployed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..inventory.selection import SelectionError, select_nodes, split_tokens
from ..model.cabling import Cable
from ..model.hooks import DAY2_REASON, hook_calls
from ..model.index import Index
from ..util.hostlist import HostlistError, expand
from .firmware import ACTIVATE, FLASH, Bump, activation, bumps, by_hand, cabled_nodes, card_models, version_key
from .floor import floor_of
from .ha import Groups, groups, replaced_switches
from .inventory_diff import LEARN_FIELDS, cable_ends, device_places, hardware_fields, unit_heights
from .steps import PARALLEL_PHASES, PULL_TRUNK, ChangePlan, Step

_OUT = ("drained", "out")


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


def _physical(c: Cable) -> tuple[Any, ...]:
    return (c.id, c.label, c.media, c.length_m, c.fiber_type, c.trunk, c.lane_group)


class _Replay:
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

    def run(self) -> list[Violation]:
        self._groups()
        for step in self.plan.steps:
            self.n = step.n
            handler = getattr(self, f"_{step.phase}", None)
            if handler is None:
                self.bad("PHASE", f"unknown phase {step.phase}")
                continue
            if step.manual and step.argv:
                self.bad("PHASE", f"a manual step ({step.phase}) carries a command")
            if not step.manual and not step.argv:
                self.bad("PHASE", f"a machine step ({step.phase}) has no command")
            handler(step)
        self.n = 0
        self._end()
        return self.violations

    def _groups(self) -> None:
        """PARALLEL: the steps of a parallel group run at the same time, in any order, so they must not depend
        on each other: consecutive machine steps of one phase, drain or resume hooks of distinct compute nodes
        (no subnet manager or Lustre server, whose HA rules depend on the order), or deploys whose hosts are
        disjoint. Replaying them in plan order then proves every order."""
        steps = self.plan.steps
        seen: set[int] = set()
        i = 0
        while i < len(steps):
            group = steps[i].group
            j = i + 1
            while j < len(steps) and group is not None and steps[j].group == group:
                j += 1
            if group is None:
                i = j
                continue
            self.n = steps[i].n
            members = steps[i:j]
            if group in seen:
                self.bad("PARALLEL", f"parallel group {group} is not one run of consecutive steps")
            seen.add(group)
            phases = {s.phase for s in members}
            if len(phases) > 1 or not phases <= PARALLEL_PHASES or any(s.manual for s in members):
                self.bad("PARALLEL", f"parallel group {group} mixes or holds steps that cannot run together "
                                     f"({', '.join(sorted(phases))})")
            elif members[0].phase == "deploy":
                hosts: set[str] = set()
                for s in members:
                    limit = _arg(s.argv, "--limit")
                    try:
                        mine = set(select_nodes(self.new, split_tokens([limit]))) if limit is not None else set()
                    except (HostlistError, SelectionError):
                        mine = set()  # reported at the step itself
                    both = sorted(hosts & mine)
                    if both:
                        self.bad("PARALLEL", f"deploys of parallel group {group} share host(s) {', '.join(both[:5])}")
                    hosts |= mine
            else:
                subjects = [s.subject for s in members]
                odd = sorted({h for h in subjects if h not in self.g.compute_rack})
                if odd:
                    self.bad("PARALLEL", f"parallel group {group}: {', '.join(odd[:5])} not compute (subnet managers "
                                         "and servers go one step at a time)")
                if len(set(subjects)) != len(subjects):
                    self.bad("PARALLEL", f"parallel group {group} names a host twice")
            i = j
        self.n = 0

    # -- hosts ------------------------------------------------------------------------------
    def _is_out(self, host: str) -> bool:
        return self.s.host.get(host) in (*_OUT, "new")

    def _take(self, host: str, how: str) -> None:
        s = self.s
        if self.fw_pending.get(host):
            self.bad("FIRMWARE", f"{host} is taken out again with firmware flashed and not activated")
        if s.host.get(host) != "in":
            self.bad("DRAIN", f"{host} is not in service ({s.host.get(host, 'absent')}): it cannot be {how}")
            return
        if host in self.g.sms:
            if host == s.master and len(self.g.sms) > 1:
                self.bad("HA", f"{host} is the master subnet manager: a standby must take over first")
            others = [x for x in self.g.sms if x != host and s.host.get(x) == "in"]
            known = [x for x in self.g.sms if x in s.host and x != host]
            if known and not others:
                self.bad("HA", f"{host} goes out while no other subnet manager is in service")
        partner = self.g.partner.get(host)
        if partner is not None and s.host.get(partner) in _OUT:
            self.bad("HA", f"{host} goes out while its failover partner {partner} is out")
        serving = sorted(t for t, srv in self.served.items() if srv == host)
        if serving:
            self.bad("HA", f"{host} goes out while serving {', '.join(serving[:5])}: fail them over to "
                           f"{partner or 'its failover server'} first")
        s.host[host] = "drained" if how == "drained" else "out"
        s.validated.discard(host)
        if host in self.g.compute_rack:
            self.out_compute.add(host)
            rack = self.g.compute_rack[host]
            self.out_per_rack[rack] = self.out_per_rack.get(rack, 0) + 1
            if len(self.out_compute) > self.g.cluster_cap or self.out_per_rack[rack] > self.g.cap_of(rack):
                problem = self.g.within_caps(set(self.out_compute))
                if problem is not None:
                    self.bad("HA", problem)

    def _drain(self, step: Step) -> None:
        for host in self._hooked(step, self.new.inv.deploy.reboot.drain):
            self._take(host, "drained")

    def _hooked(self, step: Step, template: list[str]) -> list[str]:
        """HOOK: the hosts a drain or resume step names (a host, or a hostlist for a `{hosts}` hook), once its
        command is checked to be the inventory's hook for exactly them; none when it is not."""
        try:
            hosts = expand(step.subject, limit=len(self.new.nodes) + len(self.old.nodes))
        except HostlistError as exc:
            self.bad("HOOK", f"{step.phase} of {step.subject!r}: not a host or hostlist ({exc})")
            return []
        calls = hook_calls(template, hosts, DAY2_REASON)
        if len(calls) != 1 or calls[0][1] != step.argv:
            want = " ".join(calls[0][1]) if len(calls) == 1 else f"{len(calls)} calls (one a host)"
            self.bad("HOOK", f"{step.phase} of {step.subject}: the command is not the inventory's "
                             f"deploy.reboot.{step.phase} hook for these hosts (expected: {want})")
            return []
        return hosts

    def _takeout(self, step: Step) -> None:
        self._take(step.subject, "taken out")

    def _handover(self, step: Step) -> None:
        sm = step.subject
        if sm not in self.g.sms:
            self.bad("HA", f"{sm} is not a subnet manager")
        elif self.s.host.get(sm) != "in":
            self.bad("HA", f"{sm} takes over as master while not in service")
        else:
            self.s.master = sm

    def _failover(self, step: Step) -> None:
        """The subject takes over every target that fails over to it (from the server serving it)."""
        self._serve(step.subject, {t for t, to in self.g.takeover.items() if to == step.subject}, "takes over")

    def _failback(self, step: Step) -> None:
        """The subject's own targets come back to it from whoever took them over."""
        self._serve(step.subject, {t for t, srv in self.primary.items() if srv == step.subject}, "takes back")

    def _serve(self, server: str, targets: set[str], verb: str) -> None:
        moved = sorted(t for t in targets if self.served.get(t) != server)
        if not moved:
            self.bad("HA", f"{server} {verb} no target (each one it could is served by it already)")
        elif self.s.host.get(server) != "in":
            self.bad("HA", f"{server} {verb} {', '.join(moved[:5])} while not in service")
        for t in moved:
            self.served[t] = server

    def _back(self, step: Step, host: str | None = None) -> None:
        host, s = host or step.subject, self.s
        if s.host.get(host) not in _OUT:
            self.bad("RESUME", f"{host} is resumed but was not out ({s.host.get(host, 'absent')})")
            return
        if host not in s.validated:
            self.bad("RESUME", f"{host} is resumed before a validation that covers it")
        rack = s.at.get(host, ("?", 0))[0]
        if rack in self.cooling and rack not in s.commissioned:
            self.bad("RESUME", f"{host} is resumed before rack {rack} is commissioned")
        s.host[host] = "in"
        self._counted_back(host)

    def _counted_back(self, host: str) -> None:
        if host in self.out_compute:
            self.out_compute.discard(host)
            self.out_per_rack[self.g.compute_rack[host]] -= 1

    def _resume(self, step: Step) -> None:
        for host in self._hooked(step, self.new.inv.deploy.reboot.resume):
            self._back(step, host)

    def _return(self, step: Step) -> None:
        self._back(step)

    # -- floor --------------------------------------------------------------------------------
    def _remove(self, step: Step) -> None:
        name, s = step.subject, self.s
        if name in s.racks and name not in s.at:
            inside = sorted(d for d, p in s.at.items() if p[0] == name)
            if inside:
                self.bad("SLOT", f"rack {name} is taken out with {', '.join(inside[:5])} still in it")
            del s.racks[name]
            return
        place = s.at.get(name)
        if place is None:
            self.bad("SLOT", f"{name} is taken out but is not in any rack")
            return
        if name in s.host and not self._is_out(name):
            self.bad("DRAIN", f"{name} is taken out of its rack while in service")
        still = sorted({s.port_busy[k] for k in s.busy_on.get(name, ())})
        if still:
            self.bad("CABLE", f"{name} is taken out with cable(s) {', '.join(still[:5])} still plugged")
        if name in self.panel_trunks:  # a panel is taken out only once every trunk to it is pulled
            self._trunks_off(name, f"panel {name} is taken out")
        del s.at[name]
        for u in range(place[1], place[1] + s.height.pop(name, 1)):
            if s.slot.get((place[0], u)) == name:
                del s.slot[(place[0], u)]
        s.learned.discard(name)
        if name in s.host:
            s.host[name] = "removed"
            if name not in self.new.nodes:  # it leaves; a node that moves is still out of service
                self._counted_back(name)

    def _install(self, step: Step) -> None:
        name, s = step.subject, self.s
        if name in self.new.racks and name not in self.new_places:
            if name in s.racks:  # settings of a standing rack
                before = s.racks[name]
                if (before.get("row"), before.get("position")) != self.new_spot[name]:
                    self._rack_moves(name)
                if name in self.cooling:
                    live = sorted(d for d, p in s.at.items() if p[0] == name and s.host.get(d) == "in")
                    if live:
                        self.bad("DRAIN", f"rack {name}'s cooling changes while {', '.join(live[:5])} in service")
                s.racks[name] = self.new.racks[name].model_dump(mode="json")
            else:
                s.racks[name] = self.new.racks[name].model_dump(mode="json")
            return
        want = self.new_places.get(name)
        if want is None:
            self.bad("SLOT", f"{name} is installed but the new inventory has no place for it")
            return
        if s.at.get(name) == want:  # in place: a hardware change or a field update
            if name in self.hw_changed:
                if not self._is_out(name):
                    self.bad("DRAIN", f"{name}'s hardware changes while it is in service")
                s.hw_done.add(name)
                s.learned.discard(name)
            return
        if name in s.at:
            self.bad("SLOT", f"{name} is installed at {want[0]} U{want[1]} while still at "
                             f"{s.at[name][0]} U{s.at[name][1]}")
            return
        if want[0] not in s.racks:
            self.bad("SLOT", f"{name} is installed into rack {want[0]}, which does not stand")
        height = self.new_heights.get(name, 1)
        units = [(want[0], u) for u in range(want[1], want[1] + height)]
        clash = next(((u, s.slot[u]) for u in units if u in s.slot), None)
        if clash is not None:
            span = f"U{want[1]}" if height == 1 else f"U{want[1]}-U{want[1] + height - 1}"
            self.bad("SLOT", f"{name} is installed at {want[0]} {span}, occupied by {clash[1]}"
                     + ("" if height == 1 else f" at U{clash[0][1]}"))
        s.at[name] = want
        s.height[name] = height
        for u in units:
            s.slot.setdefault(u, name)
        if name in self.new.nodes:
            s.host[name] = "out" if name in self.old.nodes else "new"
            s.hw_done.add(name)

    def _rack_moves(self, rack: str) -> None:
        """A rack rolls to another place with its devices: nothing in it in service or cabled, its
        panels' trunks off."""
        s = self.s
        inside = {d for d, p in s.at.items() if p[0] == rack}
        live = sorted(d for d in inside if s.host.get(d) == "in")
        if live:
            self.bad("DRAIN", f"rack {rack} moves while {', '.join(live[:5])} in service")
        still = sorted(c.id for k, c in s.plugged.items() if any(p[0] in inside for p in k))
        if still:
            self.bad("CABLE", f"rack {rack} moves with cable(s) {', '.join(still[:5])} still plugged")
        for panel in sorted(inside & self.panel_trunks.keys()):
            self._trunks_off(panel, f"rack {rack} moves")

    def _trunks_off(self, panel: str, why: str) -> None:
        """A panel taken out or rolled away: no trunk may still be laid to it (they are pulled first, once
        no cable is patched over them); one that is, is reported and left as laid (its pull comes later)."""
        s = self.s
        for trunk in sorted(self.panel_trunks[panel] & s.trunks):
            used = sorted(c.id for c in s.plugged.values() if c.trunk == trunk)
            if used:
                self.bad("CABLE", f"{why} with {', '.join(used[:5])} patched over trunk {trunk}")
            else:
                self.bad("CABLE", f"{why} with trunk {trunk} still laid to it: pull the trunk first")

    def _standing(self, device: str) -> bool:
        """The device is where the new inventory puts it, in a rack that stands where it should."""
        place = self.s.at.get(device)
        if place is None or place != self.new_places.get(device):
            return False
        rack = self.s.racks.get(place[0])
        return rack is not None and (rack.get("row"), rack.get("position")) == self.new_spot.get(place[0])

    def _unplug(self, step: Step) -> None:
        s = self.s
        ends = s.by_id.get(step.subject)
        if ends is None or ends not in s.plugged:
            self.bad("CABLE", f"cable {step.subject} is unplugged but is not plugged")
            return
        cable = s.plugged.pop(ends)
        del s.by_id[step.subject]
        for k in ends:
            s.port_busy.pop(k, None)
            s.busy_on.get(k[0], set()).discard(k)
            dev = k[0]
            if dev in s.host and not self._is_out(dev):
                self.bad("DRAIN", f"cable {cable.id} is unplugged from {dev} while it is in service")
            s.validated.discard(dev)

    def _plug(self, step: Step) -> None:
        s = self.s
        cable = self.new_cables.get(step.subject)
        if cable is None:
            self.bad("CABLE", f"cable {step.subject} is plugged but the new inventory has no such cable")
            return
        for end in (cable.a, cable.b):
            if not self._standing(end.device):
                self.bad("CABLE", f"cable {cable.id} is plugged into {end.device}, which is not installed where "
                                  "the new inventory puts it")
            busy = s.port_busy.get(end.key)
            if busy is not None:
                self.bad("CABLE", f"cable {cable.id} is plugged into {end}, where cable {busy} still is")
        if cable.trunk and cable.trunk not in s.trunks:
            self.bad("CABLE", f"cable {cable.id} rides trunk {cable.trunk}, which is not laid")
        if cable.id in s.by_id:
            self.bad("CABLE", f"a cable with id {cable.id} is already plugged")
        ends = cable_ends(cable)
        s.plugged[ends] = cable
        s.by_id[cable.id] = ends
        for end in (cable.a, cable.b):
            s.port_busy[end.key] = cable.id
            s.busy_on.setdefault(end.device, set()).add(end.key)
            s.validated.discard(end.device)

    def _relabel(self, step: Step) -> None:
        s = self.s
        cable = self.new_cables.get(step.subject)
        if cable is None or cable_ends(cable) not in s.plugged:
            self.bad("CABLE", f"cable {step.subject} is relabelled but no cable joins its two ports")
            return
        before = s.plugged[cable_ends(cable)]
        s.by_id.pop(before.id, None)
        s.plugged[cable_ends(cable)] = cable
        s.by_id[cable.id] = cable_ends(cable)
        for end in (cable.a, cable.b):
            s.port_busy[end.key] = cable.id

    def _trunks(self, step: Step) -> None:
        s = self.s
        if step.action.startswith(PULL_TRUNK):
            if step.subject not in s.trunks:
                self.bad("CABLE", f"trunk {step.subject} is pulled but is not laid")
            used = sorted(c.id for c in s.plugged.values() if c.trunk == step.subject)
            if used:
                self.bad("CABLE", f"trunk {step.subject} is pulled with {', '.join(used[:5])} patched over it")
            s.trunks.discard(step.subject)
        elif step.subject in self.new.trunks:
            if step.subject in s.trunks:
                self.bad("CABLE", f"trunk {step.subject} is laid while it is still laid: pull it first")
            t = self.new.trunks[step.subject]
            for panel in (t.a_panel, t.b_panel):
                if not self._standing(panel):
                    self.bad("SLOT", f"trunk {step.subject} is laid to panel {panel}, which is not installed "
                                     "where the new inventory puts it")
            s.trunks.add(step.subject)
        else:
            self.bad("CABLE", f"trunk {step.subject} is laid but the new inventory has no such trunk")

    def _commission(self, step: Step) -> None:
        rack = step.subject
        if rack not in self.s.racks:
            self.bad("SLOT", f"rack {rack} is commissioned but does not stand")
            return
        if rack in self.cooling and self.s.racks[rack].get("cooling") != self.new.racks[rack].cooling:
            self.bad("RESUME", f"rack {rack} is commissioned before its cooling is changed")
        self.s.commissioned.add(rack)

    # -- machine steps ------------------------------------------------------------------------
    def _learn(self, step: Step) -> None:
        s = self.s
        if step.argv[:2] != ("clusterforge", "learn"):
            self.bad("LEARN", "a learn step must run `clusterforge learn`")
        cabled = {k[0] for ends in s.plugged for k in ends}
        required = set((_arg(step.argv, "--require") or "").split(",")) - {""}
        for d in sorted(required):
            if d not in cabled:
                self.bad("LEARN", f"{d}'s GUID is learned before it is cabled")
        s.learned |= {d for d in cabled if d in s.at and (d not in self.hw_changed or d in s.hw_done)}

    def _limit(self, step: Step, nodes_only: bool) -> list[str] | None:
        """The hosts a step's `--limit` names, read as the command reads it: `deploy` through the
        inventory's selection (names, racks, roles, units, ranges of them), `validate` as host names or
        ranges of them; a PHASE violation (and no hosts) when it names nothing the new inventory has."""
        value = _arg(step.argv, "--limit")
        if value is None:
            return None
        try:
            if nodes_only:
                hosts = expand(value, limit=len(self.new.nodes))
                unknown = [h for h in hosts if h not in self.new.nodes]
                if unknown:
                    raise SelectionError(f"--limit {', '.join(unknown[:5])}: not a node")
                return hosts
            return select_nodes(self.new, split_tokens([value]))
        except (HostlistError, SelectionError) as exc:
            self.bad("PHASE", f"{step.phase} step's {exc}")
            return []

    def _deploy(self, step: Step, in_place: bool = False) -> None:
        hosts = self._limit(step, nodes_only=False)
        if step.argv[:2] != ("clusterforge", "deploy") or hosts is None:
            self.bad("PHASE", "a deploy step must run `clusterforge deploy ... --limit HOSTS`")
            return
        for h in hosts:
            if h not in self.s.at:
                self.bad("DRAIN", f"{h} is deployed but is not installed")
            elif h in self.disrupted and not in_place and not self._is_out(h):
                self.bad("DRAIN", f"{h} gets a disruptive change while in service")
            self.s.deployed.add(h)
            self.s.validated.discard(h)

    def _fabric(self, step: Step) -> None:
        missing = sorted(d for d in self.needs_learn if d not in self.s.learned)
        if missing:
            self.bad("LEARN", f"OpenSM files are pushed naming {', '.join(missing[:5])} before their GUIDs "
                              "are learned")
        self._deploy(step, in_place=True)  # OpenSM re-reads its files

    def _validate(self, step: Step) -> None:
        if step.argv[:2] != ("clusterforge", "validate"):
            self.bad("PHASE", "a validate step must run `clusterforge validate`")
        hosts = self._limit(step, nodes_only=True)
        covered = set() if "--fabric-only" in step.argv else set(hosts) if hosts is not None else set(self.s.host)
        pending = sorted(h for h in self.fw_pending if self.fw_pending[h] and (h in covered or h == self.fw_open))
        if pending:
            self.bad("FIRMWARE", f"{', '.join(pending[:5])} validated before the new firmware "
                                 f"({', '.join(sorted(self.fw_pending[pending[0]]))}) is activated")
        self.s.validated |= covered
        self.fw_open = None  # the switch flashed last is proven (its nodes' ports, or the fabric)

    # -- firmware (day2/firmware.py) ------------------------------------------------------------
    def _bump_of(self, step: Step) -> Bump | None:
        model = _arg(step.argv, "--model")
        if model is None and step.subject in self.fw_cabled:
            model = self.new.switches[step.subject].model if step.subject in self.new.switches else None
        switch = _arg(step.argv, "--switch")
        if model is None and switch is not None and switch in self.new.switches:
            model = self.new.switches[switch].model
        b = self.fw.get(model or "")
        if b is None:
            self.bad("FIRMWARE", f"{step.phase} of {model or step.subject}, whose firmware pin does not change")
        return b

    def _switch_out(self, switch: str) -> None:
        """A switch is flashed: the only one since the last validation, every node cabled to it out."""
        if self.fw_open is not None and self.fw_open != switch:
            self.bad("FIRMWARE", f"switch {switch} is flashed while {self.fw_open} is not validated yet: one "
                                 "switch at a time")
        live = [n for n in self.fw_cabled.get(switch, []) if self.s.host.get(n) == "in"]
        if live:
            self.bad("FIRMWARE", f"switch {switch} is flashed while {', '.join(live[:5])} (cabled to it) "
                                 f"{'is' if len(live) == 1 else 'are'} in service")
        self.fw_open = switch
        for n in self.fw_cabled.get(switch, []):
            self.s.validated.discard(n)

    def _flash(self, step: Step) -> None:
        if step.argv[:3] != FLASH:
            self.bad("PHASE", "a flash step must run `clusterforge firmware flash`")
            return
        b = self._bump_of(step)
        if b is None:
            return
        version = _arg(step.argv, "--version")
        if version != b.new:
            self.bad("FIRMWARE", f"{b.model} is flashed to {version}, pinned {b.new}")
        elif b.downgrade or (version is not None and version_key(version) < version_key(b.old)):
            fw = self.new.inv.firmware
            if fw is None or not fw.allow_downgrade:
                self.bad("FIRMWARE", f"{b.model} {b.old} -> {version} is a downgrade and the new inventory does not "
                                     "allow one (firmware.allow_downgrade)")
            if "--allow-downgrade" not in step.argv:
                self.bad("FIRMWARE", f"{b.model} {b.old} -> {version} is a downgrade: the flash must say "
                                     "--allow-downgrade")
        switch = _arg(step.argv, "--switch")
        if b.kind == "switches":
            if switch is None or switch not in b.target_set:
                self.bad("FIRMWARE", f"a flash of switch model {b.model} must name one of its switches (--switch)")
                return
            if by_hand(self.new, b.model):
                self.bad("FIRMWARE", f"{switch} ({b.model}) is flashed from its switch OS: a manual upgrade step")
            self._switch_out(switch)
            self.fw_pending.setdefault(switch, set()).add(b.model)
            return
        hosts = self._limit(step, nodes_only=True)
        if hosts is None:
            self.bad("FIRMWARE", f"a flash of {b.model} must name its hosts (--limit)")
            return
        for h in hosts:
            if b.model not in card_models(self.new, h):
                self.bad("FIRMWARE", f"{h} is flashed with {b.model} firmware but has no such card")
                continue
            if not self._is_out(h):
                self.bad("FIRMWARE", f"{h} is flashed while in service (not drained)")
            self.fw_pending.setdefault(h, set()).add(b.model)
            self.s.validated.discard(h)

    def _upgrade(self, step: Step) -> None:
        switch = step.subject
        b = self.fw.get(self.new.switches[switch].model) if switch in self.new.switches else None
        if b is None or switch not in b.target_set:
            self.bad("FIRMWARE", f"{switch} is upgraded but its firmware pin does not change")
            return
        if not by_hand(self.new, b.model):
            self.bad("FIRMWARE", f"{switch} ({b.model}) is flashed through the fabric: a machine flash step")
        self._switch_out(switch)
        self.fw_need.discard((switch, b.model))  # its OS flashes and reboots it: activated

    def _activate(self, step: Step) -> None:
        if step.argv[:3] != ACTIVATE:
            self.bad("PHASE", "an activate step must run `clusterforge firmware activate`")
            return
        how = _arg(step.argv, "--how")
        switch = _arg(step.argv, "--switch")
        targets = [switch] if switch is not None else self._limit(step, nodes_only=True) or []
        model = _arg(step.argv, "--model")
        for t in targets:
            pending = self.fw_pending.get(t, set())
            if not pending:
                self.bad("FIRMWARE", f"{t}'s firmware is activated but nothing was flashed on it")
                continue
            if switch is None and not self._is_out(t):
                self.bad("FIRMWARE", f"{t}'s firmware is activated while it is in service")
            if (switch is not None) != (how == "swreset"):
                self.bad("FIRMWARE", f"{t}'s firmware is activated by {how}: a switch by swreset (in-band), a host "
                                     "by mlxfwreset or a reboot")
            if how == "reboot":
                done = set(pending)
            else:
                done = {model} & pending if model is not None else set(pending) if switch is not None else set()
                wrong = sorted(m for m in done if switch is None and activation(self.new, m) != how)
                if wrong:
                    self.bad("FIRMWARE", f"{t}'s {', '.join(wrong)} firmware is activated by {how}, which it does "
                                         f"not support ({activation(self.new, wrong[0])})")
            for m in done:
                self.fw_need.discard((t, m))
            pending -= done
            self.s.validated.discard(t)

    # -- the end ------------------------------------------------------------------------------
    def _end(self) -> None:
        s, new = self.s, self.new
        want_racks = {r.name: r.model_dump(mode="json") for r in new.inv.racks}
        for r in sorted(set(want_racks) ^ set(s.racks)):
            self.bad("END", f"rack {r} {'is missing' if r in want_racks else 'still stands'}")
        for r in sorted(set(want_racks) & set(s.racks)):
            if want_racks[r] != s.racks[r]:
                self.bad("END", f"rack {r}'s settings are not the new inventory's")
        if s.at != self.new_places:
            wrong = sorted(d for d in set(s.at) | set(self.new_places) if s.at.get(d) != self.new_places.get(d))
            self.bad("END", f"devices not where the new inventory puts them: {', '.join(wrong[:8])}")
        have = s.plugged
        same = len(have) == len(new.inv.cables)
        for c in new.inv.cables if same else ():
            h = have.get(frozenset((c.a.key, c.b.key)))
            if h is None or (h is not c and _physical(h) != _physical(c)):
                same = False
                break
        if not same:
            want = {frozenset((c.a.key, c.b.key)): c for c in new.inv.cables}
            want_p = {k: _physical(c) for k, c in want.items()}
            have_p = {k: _physical(c) for k, c in have.items()}
            diff = sorted({str(want_p.get(k, have_p.get(k, ("?",)))[0]) for k in set(want_p) | set(have_p)
                           if want_p.get(k) != have_p.get(k)})
            self.bad("END", f"cables not as the new inventory has them: {', '.join(diff[:8])}")
        live = sorted(h for h in new.nodes if s.host.get(h) not in ("in", "new"))
        if live:
            self.bad("END", f"hosts not back in service: {', '.join(live[:8])}")
        if s.trunks != set(new.trunks):
            self.bad("END", f"trunks laid {sorted(s.trunks)} differ from the new inventory's")
        missing = sorted(d for d in self.needs_learn if d not in s.learned)
        if missing:
            self.bad("END", f"new hardware never learned: {', '.join(missing[:8])}")
        undeployed = sorted(self.changed_hosts - s.deployed)
        if undeployed:
            self.bad("END", f"changed hosts never deployed: {', '.join(undeployed[:8])}")
        for rack in sorted(self.cooling - s.commissioned):
            self.bad("END", f"rack {rack}'s new cooling is never commissioned")
        away = sorted(t for t, srv in self.served.items() if srv != self.primary[t] and srv in new.nodes
                      and self.primary[t] in new.nodes)
        if away:
            self.bad("HA", f"Lustre targets not back on their own server: "
                           f"{', '.join(f'{t} (on {self.served[t]})' for t in away[:5])}")
        if self.fw_need:
            left = sorted(self.fw_need)
            self.bad("FIRMWARE", f"firmware never flashed and activated: "
                                 f"{', '.join(f'{t} ({m})' for t, m in left[:8])}"
                                 + (f" and {len(left) - 8} more" if len(left) > 8 else ""))


def _arg(argv: tuple[str, ...], flag: str) -> str | None:
    if flag in argv:
        i = argv.index(flag)
        if i + 1 < len(argv):
            return argv[i + 1]
    return None


def verify(plan: ChangePlan, old: Index, new: Index) -> list[Violation]:
    """Every rule the plan breaks, in step order (empty: the plan is proven)."""
    return _Replay(plan, old, new).run()


def check_plan(plan: ChangePlan, old: Index, new: Index) -> None:
    """Raise PlanRejected when the plan breaks a rule."""
    violations = verify(plan, old, new)
    if violations:
        raise PlanRejected(violations)
