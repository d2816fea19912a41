"""From two inventories to the ordered day-2 change plan, in waves. Pure.

1. The work: every physical task (unplug, remove, install, lay trunks, plug, relabel,
   commission) with the hosts it interrupts, and every host a deploy change disrupts.
   A moved device's cables are all unplugged and plugged again (whatever else changes);
   a switch swapped in place (new GUID or model) likewise, taken out and put back.
2. Units: tasks that share a slot, a port, a device put in or taken out, a trunk, a rack that
   comes or goes, or an interrupted host are one unit (a swap is one unit: the slot is emptied
   before it is filled). A host that only a deploy disrupts is a unit of its own.
3. Waves: units packed in order (floor order of their first rack) so that no wave holds two
   subnet managers, both servers of a Lustre failover pair, or more compute than
   `deploy.max_drain` allows per rack and per cluster (a unit that alone exceeds the cap goes
   alone, with a warning). Each wave, rack by rack in floor order: drain (hook) / takeout
   (operator; a master SM is handed over to a standby first) -> unplug -> [pull trunks: a pass
   of their own] -> remove (panels and devices; an emptied rack last) -> install -> [lay
   trunks] -> plug -> relabel -> commission, then `learn` (new
   hardware's GUIDs, once cabled), `deploy` (one per set of components over every host of the
   wave, its --limit a hostlist: the deploy runs them in parallel), `fabric` (OpenSM files, after
   every learn), `validate` (the wave's hosts; the last wave: everything), `resume` / `return`.
   A change that drains nobody (NCCL, /etc/hosts, monitoring) is one wave.
4. Parallel groups: a wave's drain hooks, its resume hooks and its deploys are marked to run at the
   same time (`Step.group`; apply runs them together, the verifier proves them independent).

The plan is then proven by day2/verify.py. Commands are argv lists, never shell strings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..model.cabling import Cable
from ..model.hooks import DAY2_REASON, hook_calls, takes_many
from ..model.index import Index, PortKey
from ..util.hostlist import compress as hostlist
from .firmware import (
    Bump,
    activate_argv,
    activation,
    bumps,
    by_hand,
    cabled_nodes,
    flash_argv,
    new_pins,
    refuse_downgrades,
    staged_path,
)
from .ha import Groups, changed_trunks, groups, moved_racks, relaid_trunks, replaced_switches
from .host_diff import LEAVES, HostChange, diff_hosts
from .inventory_diff import (
    LEARN_FIELDS,
    CableChange,
    DeviceChange,
    InventoryDiff,
    device_places,
    diff_inventories,
    hardware_fields,
    unit_heights,
)
from .steps import PARALLEL_PHASES, PULL_TRUNK, ChangePlan, Phase, Step
from .waves import Task, Wave, pack_waves, units

_BEFORE_TRUNKS: tuple[Phase, ...] = ("unplug", "remove", "install")
_AFTER_TRUNKS: tuple[Phase, ...] = ("plug", "relabel", "commission")
_INTERRUPTING = ("moved", "replaced", "rerouted", "removed")
_RACK_DRAIN_FIELDS = ("cooling",)
_Emit = Callable[..., None]


def change_plan(old: Index, new: Index, env: str, env_name: str) -> ChangePlan:
    """The ordered plan that takes the cluster built from `old` to `new`.

    `env` is the new inventory's path as the commands in the plan name it; `env_name` the
    environment's name in rendered files.
    """
    diff = diff_inventories(old, new)
    hosts = tuple(diff_hosts(old, new, env_name, diff))
    return _Planner(old, new, env, diff, hosts).build()


class _Planner:
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

    # -- where things are ---------------------------------------------------------------
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
        keys = [f"port:{_port(c.a.key)}", f"port:{_port(c.b.key)}"]
        keys += [f"dev:{d}" for d in (c.a.device, c.b.device) if d in self.placed]
        if c.trunk:
            keys.append(f"trunk:{c.trunk}")
        return tuple(keys)

    def _nodes_on(self, c: Cable, index: Index) -> set[str]:
        return {e.device for e in (c.a, c.b) if e.device in index.nodes}

    # -- the plan -------------------------------------------------------------------------
    def build(self) -> ChangePlan:
        self._cables()
        self._devices()
        for h in self.hosts:
            for why in h.disruptive:
                self._interrupt(h.host, why)
        for b in self.fw_hca:
            for host in b.targets:
                self._interrupt(host, f"firmware {b}")
        for b in self.fw_hca:
            if b.image is None:
                self.warnings.append(f"firmware pin {b.model} names no image: `clusterforge firmware flash` refuses "
                                     f"to flash until firmware.hcas[{b.at}].image does")
        for model in new_pins(self.old, self.new):
            self.warnings.append(f"firmware pin {model} is new: nothing is flashed (what runs now is not in the old "
                                 "inventory); `validate` reports the cards that differ (FW-DRIFT)")
        waves = self._waves()
        self.wave_hosts = set(self.reasons)
        waves += self._switch_waves()
        steps = _parallel(self._ordered(waves), set(self.g.compute_rack))
        firmware = tuple(f"{b} ({len(b.targets)} {'host' if b.kind == 'hcas' else 'switch'}"
                         f"{'' if len(b.targets) == 1 else ('s' if b.kind == 'hcas' else 'es')})" for b in self.fw)
        return ChangePlan(self.env, self.diff, self.hosts, tuple(steps), tuple(self.reasons), tuple(self.warnings),
                          firmware)

    def _cables(self) -> None:
        old, new = self.old, self.new
        what = {"moved": "unplug (it moves)", "replaced": "unplug (a new cable replaces it)",
                "rerouted": "unplug at the patch panels (re-patched)", "removed": "unplug and remove"}
        touched: set[str] = set()  # old ids already unplugged
        relabel_of: dict[str, CableChange] = {}
        for c in self.diff.cables:
            if c.change in _INTERRUPTING and c.old is not None:
                touched.add(c.old.id)
                self._unplug(c.old, what[c.change])
            if c.change in ("added", "moved", "replaced", "rerouted") and c.new is not None:
                self._plug(c.new)
            if c.change == "relabelled" and c.old is not None and c.new is not None:
                relabel_of[c.old.id] = c
        # every cable of a device that moves or is swapped comes out and goes back, by label
        relaid = self.relaid
        new_by_ends = ({frozenset((c.a.key, c.b.key)): c for c in new.inv.cables} if self.rehomed or relaid
                       else {})
        for cable in old.inv.cables if new_by_ends else ():
            if cable.id in touched or not ({cable.a.device, cable.b.device} & self.rehomed
                                           or (relaid and cable.trunk in relaid)):
                continue
            mover = next((d for d in (cable.a.device, cable.b.device) if d in self.rehomed), None)
            after = new_by_ends.get(frozenset((cable.a.key, cable.b.key)))
            if after is None:  # its device was rehomed and the cable's ends changed: handled above
                continue
            if mover is None:
                why = f"trunk {cable.trunk} is re-laid: " + (
                    f"it changes ({', '.join(self.trunk_fields[cable.trunk]) or 'its panels'})"
                    if cable.trunk in self.trunk_fields else "a patch panel moves")
            elif mover in self.swapped:
                why = "its switch is replaced"
            elif mover in self.inside:
                why = f"rack {self.inside[mover]} moves"
            else:
                why = f"{mover} moves"
            self._unplug(cable, f"unplug ({why})")
            self._plug(after)
            relabel_of.pop(cable.id, None)
        for ch in relabel_of.values():
            assert ch.old is not None and ch.new is not None
            self._task("relabel", self._rack_of(ch.new.a.device, new), ch.new.id, _relabel(ch),
                       keys=self._cable_keys(ch.new, new))

    def _unplug(self, c: Cable, verb: str) -> None:
        hosts = self._nodes_on(c, self.old)
        for h in hosts:
            self._interrupt(h, f"cable {c.id} is unplugged")
        self._task("unplug", self._rack_of(c.a.device, self.old), c.id, f"{verb}: {self._cable_text(c, self.old)}",
                   hosts, self._cable_keys(c, self.old))

    def _plug(self, c: Cable) -> None:
        hosts = {h for h in self._nodes_on(c, self.new) if h in self.reasons}
        self._task("plug", self._rack_of(c.a.device, self.new), c.id, f"plug: {self._cable_text(c, self.new)}",
                   hosts, self._cable_keys(c, self.new))

    def _devices(self) -> None:
        for d in self.diff.devices:
            if d.kind == "rack":
                self._rack(d)
            elif d.kind == "trunk":
                self._trunk(d)
            else:
                self._device(d)
        changed = {d.name for d in self.diff.devices if d.kind == "trunk"}
        for tid in sorted(self.relaid - changed):
            if tid in self.new.trunks:  # unchanged itself, but a panel it ends at moves
                self._trunk(DeviceChange("trunk", tid, "changed", None, None, ("a panel moves",)))

    def _device(self, d: DeviceChange) -> None:
        noun = d.kind.replace("_", " ")
        old_rack_gone = d.old_place is not None and d.old_place[0] not in self.new.racks
        new_rack_new = d.new_place is not None and d.new_place[0] not in self.old.racks
        if d.name in self.swapped and d.old_place is not None and d.new_place is not None:
            sw = self.new.switches[d.name]
            why = f"a {sw.model} replaces it" if "model" in d.fields else "failed unit: same model, new GUID"
            self._task("remove", d.old_place[0], d.name, f"take out switch at {_u(d.old_place)} ({why})",
                       keys=(f"dev:{d.name}", *self._slots(d.name, d.old_place, self.old)))
            self._task("install", d.new_place[0], d.name, f"install the replacement {sw.model} at {_u(d.new_place)}",
                       keys=(f"dev:{d.name}", *self._slots(d.name, d.new_place, self.new)))
            self.learn.add(d.name)
            return
        if d.change in ("removed", "moved") and d.old_place is not None:
            verb = "take out" if d.change == "removed" else "take out (it moves to " + _u(d.new_place) + ")"
            hosts = {d.name} if d.kind == "node" else set()
            if d.kind == "node":
                self._interrupt(d.name, "it is taken out of its rack" if d.change == "moved" else LEAVES)
            keys = (f"dev:{d.name}", *self._slots(d.name, d.old_place, self.old),
                    *((f"rack:{d.old_place[0]}",) if old_rack_gone else ()))
            self._task("remove", d.old_place[0], d.name, f"{verb} {noun} at {_u(d.old_place)}", hosts, keys)
        if d.change in ("added", "moved") and d.new_place is not None:
            model = _model(self.new, d)
            hosts = {d.name} if d.kind == "node" and d.change == "moved" else set()
            keys = (f"dev:{d.name}", *self._slots(d.name, d.new_place, self.new),
                    *((f"rack:{d.new_place[0]}",) if new_rack_new else ()))
            self._task("install", d.new_place[0], d.name, f"install {noun} at {_u(d.new_place)}"
                       + (f" ({model})" if model else ""), hosts, keys)
            if d.change == "added" and d.kind in ("node", "switch"):
                self.learn.add(d.name)
        if d.change == "changed" and d.new_place is not None:
            hardware = hardware_fields(d.fields)
            addresses = [f for f in d.fields if f.startswith("address ")]
            if d.kind == "node" and addresses:
                self._interrupt(d.name, "its addresses change (" + ", ".join(f[8:] for f in addresses) + ")")
            if hardware and d.kind == "node":
                self._interrupt(d.name, f"hardware changes ({', '.join(hardware)})")
                self._task("install", d.new_place[0], d.name, f"change hardware: {', '.join(hardware)}", {d.name},
                           (f"dev:{d.name}",))
                if any(f in LEARN_FIELDS for f in hardware):
                    self.learn.add(d.name)
            else:
                rest = [f for f in d.fields if not f.startswith("address ")]
                if rest:
                    self._task("install", d.new_place[0], d.name, f"update {', '.join(rest)}")
            if addresses:
                self.warnings.append(f"{d.kind} {d.name} is renumbered ({', '.join(f[8:] for f in addresses)}): "
                                     "addresses are frozen (addresses.generated.yaml), so it was asked for "
                                     "(`plan --renumber --write`, a declared mgmt_ip/bmc_ip, an edited pool); "
                                     "it is drained, and every host's /etc/hosts redeployed")

    def _rack(self, d: DeviceChange) -> None:
        key = (f"rack:{d.name}",)
        if d.change == "added":
            self._task("install", d.name, d.name, f"place rack in row {_pl(d.new_place)}", keys=key)
        elif d.change == "removed":
            self._task("remove", d.name, d.name, f"take the rack out of row {_pl(d.old_place)} (it is empty now)",
                       keys=key, last=True)
        elif d.change == "moved":
            # it rolls with its devices in it: everything in it out of service and uncabled (its panels'
            # trunks pulled), moved, then cabled again (plug), learned and validated before anyone resumes
            inside = sorted(n for n, rack in self.inside.items() if rack == d.name)
            aboard = {n for n in inside if n in self.old.nodes}
            for h in sorted(aboard):
                self._interrupt(h, f"rack {d.name} moves")
            what = f" with {len(inside)} device(s) in it" if inside else ""
            self._task("install", d.name, d.name, f"move the rack{what}: row {_pl(d.old_place)} -> "
                       f"{_pl(d.new_place)}", aboard, (*key, *(f"dev:{n}" for n in inside)))
            if d.fields:
                self._rack(DeviceChange("rack", d.name, "changed", d.new_place, d.new_place, d.fields))
        else:
            before = self.old.racks[d.name].model_dump(mode="json")
            after = self.new.racks[d.name].model_dump(mode="json")
            values = ", ".join(f"{f} {before.get(f)} -> {after.get(f)}" for f in d.fields)
            drains = [f for f in d.fields if f in _RACK_DRAIN_FIELDS]
            hosts: set[str] = set()
            if drains:
                hosts = {n.name for n in self.old.inv.nodes if n.rack == d.name}
                hosts |= {n.name for n in self.new.inv.nodes if n.rack == d.name and n.name in self.old.nodes}
                for h in sorted(hosts):
                    self._interrupt(h, f"rack {d.name}: {values}")
            self._task("install", d.name, d.name, f"rack settings: {values}", hosts, key)
            if "cooling" in d.fields:
                new_rack = self.new.racks[d.name]
                for check in _commissioning(str(before.get("cooling")), new_rack.cooling, new_rack.leak_sensors):
                    self._task("commission", d.name, d.name, check, hosts, key)

    def _trunk(self, d: DeviceChange) -> None:
        """Trunks join panels in two racks, in passes of their own: a trunk that goes, or is laid again
        (it changes, or a panel it ends at moves), is pulled once the old cables over it are out and before
        its panels are taken out; a trunk that comes, or is laid again, is laid once its panels are in and
        before any cable is patched onto it."""
        before = self.old.trunks.get(d.name) if d.change != "added" else None
        after = self.new.trunks.get(d.name) if d.change != "removed" else None
        for trunk, index in ((before, self.old), (after, self.new)):
            if trunk is None:
                continue
            panels = {p.name: p for p in index.inv.patch_panels}
            ends = " - ".join(f"{name} [{panels[name].rack} U{panels[name].u}]" if name in panels else name
                              for name in (trunk.a_panel, trunk.b_panel))
            keys = (f"trunk:{d.name}", *(f"dev:{p}" for p in (trunk.a_panel, trunk.b_panel) if p in self.placed))
            if trunk is before:
                action = (f"{PULL_TRUNK} out: {ends}" if after is None else
                          f"{PULL_TRUNK} off its panels (it is laid again): {ends}")
            elif d.change == "added":
                action = f"lay the MPO-24 trunk {ends} ({trunk.fiber_type}, {trunk.length_m:g} m)"
            else:
                action = f"re-lay the MPO-24 trunk {ends}: {self._trunk_changes(d)}"
            self._task("trunks", None, d.name, action, keys=keys)

    def _trunk_changes(self, d: DeviceChange) -> str:
        """What makes a trunk laid again: its fields that change, old -> new (length_m 7 -> 9), else its panels."""
        before, after = self.old.trunks.get(d.name), self.new.trunks.get(d.name)
        if before is None or after is None or not d.fields:
            return ", ".join(d.fields) or "panels"
        a, b = before.model_dump(mode="json"), after.model_dump(mode="json")
        return ", ".join(f"{f} {_value(a.get(f))} -> {_value(b.get(f))}" if f in a else f for f in d.fields)

    # -- units and waves (day2/waves.py) -------------------------------------------------------
    def _waves(self) -> list[Wave]:
        def host_rack(h: str) -> str:
            return self._rack_of(h, self.old if h in self.old.nodes else self.new)

        return pack_waves(units(self.tasks, self.reasons, self._rack_order(), host_rack), self.g, self.reasons,
                          self.warnings)

    def _switch_waves(self) -> list[Wave]:
        """One wave per switch whose firmware is bumped, after every other wave, in floor order: the nodes
        cabled to it (as built) out of service first (a spine: none), never two switches at once."""
        if not self.fw_switch:
            return []
        order = {r: i for i, r in enumerate(self._rack_order())}
        cabled = cabled_nodes(self.old, set(self.fw_switch))
        out: list[Wave] = []
        for sw in sorted(self.fw_switch, key=lambda s: order.get(self._rack_of(s, self.old), 1 << 30)):
            nodes = [n for n in cabled.get(sw, []) if n in self.new.nodes]
            for n in nodes:
                self.reasons.setdefault(n, [])  # drained (its reason is the wave's: not the other waves')
            problem = self.g.within_caps({n for n in nodes if n in self.g.compute_rack}, forced_ok=False)
            if problem is not None:
                self.warnings.append(f"{problem}: switch {sw}'s firmware takes them out together")
            sms = [n for n in nodes if n in self.g.sms]
            if len(sms) > 1:
                self.warnings.append(f"subnet managers {', '.join(sms)} are out together: switch {sw}'s firmware "
                                     "takes them all out (the fabric has no standby meanwhile)")
            out.append(Wave(hosts=list(nodes), held=set(nodes), switches=[sw],
                            why=f"switch {sw}'s firmware is bumped ({self.fw_switch[sw]})"))
        return out

    # -- steps ------------------------------------------------------------------------------
    def _ordered(self, waves: list[Wave]) -> list[Step]:
        steps: list[Step] = []
        policy = self.new.inv.deploy.reboot
        master = self.g.master
        in_service = {h for h in self.g.sms if h in self.old.nodes}
        detail = {h.host: h for h in self.hosts}
        deployed: set[str] = set()
        opensm = [h for h in self.hosts if "opensm" in h.component_names and h.change != "removed"]
        last_physical = max((i for i, w in enumerate(waves) if w.tasks), default=0)
        rack_order = self._rack_order()
        installed = {t.subject for t in self.tasks if t.phase == "install"}  # deployed in the wave of the install

        def emit(phase: Phase, rack: str | None, subject: str, action: str, argv: tuple[str, ...] = ()) -> None:
            steps.append(Step(len(steps) + 1, phase, rack, subject, action, argv))

        for wi, wave in enumerate(waves):
            lastwave = wi == len(waves) - 1
            out_hosts = [h for h in self.reasons if h in wave.held]
            by_rack: dict[str | None, dict[Phase, list[Task]]] = {}
            for t in wave.tasks:
                by_rack.setdefault(t.rack, {}).setdefault(t.phase, []).append(t)
            hosts_by_rack: dict[str, list[str]] = {}
            for h in out_hosts:
                hosts_by_rack.setdefault(self._rack_of(h, self.old if h in self.old.nodes else self.new), []).append(h)

            # a `{hosts}` drain hook: the wave's compute (no subnet manager: its handover comes first) in one call
            batched = ([h for r in rack_order for h in hosts_by_rack.get(r, []) if h in self.old.nodes
                        and self.old.nodes[h].role == "compute" and h not in self.g.sms]
                       if takes_many(policy.drain) else [])

            def take_out(rack: str, hosts_by_rack: dict[str, list[str]] = hosts_by_rack, wave: Wave = wave,
                         batched: list[str] = batched) -> None:
                nonlocal master
                for h in hosts_by_rack.get(rack, []):
                    node = self.old.nodes.get(h) or self.new.nodes.get(h)
                    if node is None or h not in self.old.nodes or h in batched:
                        continue  # a new host (never in service yet), or drained with the wave
                    why = wave.why or "; ".join(self.reasons[h])
                    if h == master and len(self.g.sms) > 1:
                        standby = next((s for s in self.g.sms if s != h and s in in_service), None)
                        if standby is not None:
                            emit("handover", rack, standby, f"make {standby} the master subnet manager before {h} "
                                 f"goes out (raise its priority or stop OpenSM on {h}; `sminfo` shows {standby} "
                                 "MASTER)")
                            master = standby
                    mine = self.g.targets.get(h, ())
                    takers = sorted({self.g.takeover[t] for t in mine if t in self.g.takeover})
                    for taker in takers:  # a Lustre server's targets fail over to its partner first
                        moved = [t for t in mine if self.g.takeover.get(t) == taker]
                        emit("failover", rack, taker, f"fail {h}'s targets over to {taker} before {h} goes out: "
                             f"{', '.join(moved)} (unmount them on {h}, mount them on {taker}; `lctl dl` on "
                             f"{taker} lists them UP, clients recover)")
                    if node.role == "compute" and policy.drain:
                        [(_, argv)] = hook_calls(policy.drain, [h], DAY2_REASON)
                        emit("drain", rack, h, f"drain: {why}", argv)
                    else:
                        verb = "drain" if node.role == "compute" else f"take out of service ({node.role})"
                        emit("takeout", rack, h, f"{verb}: {why}")
                    in_service.discard(h)

            def racks(phases: tuple[Phase, ...], drains: bool,
                      by_rack: dict[str | None, dict[Phase, list[Task]]] = by_rack,
                      batched: list[str] = batched, wave: Wave = wave) -> None:
                # phase by phase across the wave's racks (work in one rack may wait on another's: a leaf's
                # cables are unplugged in its nodes' racks before it comes out of the network rack)
                if drains:
                    for rack in rack_order:
                        take_out(rack)
                    if batched:
                        why = wave.why or _reasons_text([r for h in batched for r in self.reasons[h]])
                        [(_, argv)] = hook_calls(policy.drain, batched, DAY2_REASON)
                        emit("drain", self._one_rack(batched), hostlist(batched),
                             f"drain {_hosts_text(batched)}: {why}", argv)
                for phase in phases:
                    for rack in rack_order:
                        tasks = by_rack.get(rack, {}).get(phase, [])
                        for t in sorted(tasks, key=lambda t: t.last):
                            emit(phase, rack, t.subject, t.action)

            trunk_tasks = by_rack.get(None, {}).get("trunks", [])
            if trunk_tasks:  # unplug -> pull trunks -> remove, install -> lay trunks -> plug
                racks(_BEFORE_TRUNKS[:1], True)
                for t in trunk_tasks:
                    if t.action.startswith(PULL_TRUNK):
                        emit("trunks", None, t.subject, t.action)
                racks(_BEFORE_TRUNKS[1:], False)
                for t in trunk_tasks:
                    if not t.action.startswith(PULL_TRUNK):
                        emit("trunks", None, t.subject, t.action)
                racks(_AFTER_TRUNKS, False)
            else:
                racks((*_BEFORE_TRUNKS, *_AFTER_TRUNKS), True)
            wave_learn = sorted(d for d in self.learn if any(t.subject == d for t in wave.tasks))
            if wave_learn:
                emit("learn", None, ", ".join(wave_learn),
                     "learn the GUIDs of the new hardware from the fabric (now cabled) and check each is bound",
                     ("clusterforge", "learn", self.env, "--require", ",".join(wave_learn)))
            # deploys: the wave's hosts; the first wave also every host deployed in place
            members = set(wave.hosts) | {t.subject for t in wave.tasks if t.phase == "install"}
            todo = [h for h in self.hosts if h.change != "removed" and h.host not in deployed
                    and (h.host in members or (wi == 0 and h.host not in self.wave_hosts
                                               and h.host not in installed))]
            self._deploy_steps(todo, detail, emit, rack_order)
            deployed.update(h.host for h in todo)
            self._firmware_steps(wave, out_hosts, emit)
            if opensm and wi == last_physical and not any(
                    s.phase == "fabric" for s in steps):
                hosts = [h.host for h in opensm]
                what = "; ".join(str(c) for c in opensm[0].components if c.component == "opensm")
                emit("fabric", None, _hosts_text(hosts),
                     f"deploy OpenSM's files (the subnet manager re-reads them): {what}",
                     ("clusterforge", "deploy", self.env, "--yes", "--limit", hostlist(hosts), "--component", "opensm"))
            back = [h for h in out_hosts if h in self.new.nodes]
            if lastwave:
                if steps:
                    emit("validate", None, "fabric and hosts",
                         "validate against the new inventory; resume only when clean",
                         ("clusterforge", "validate", self.env))
            elif back:  # a switch's wave also checks that switch's firmware (its findings kept under --limit)
                emit("validate", None, _hosts_text(back), f"validate wave {wi + 1}'s hosts against the new "
                     "inventory; resume them only when clean",
                     ("clusterforge", "validate", self.env, "--limit", hostlist(back), *_switch_arg(wave.switches)))
            elif wave.switches:  # a spine: no host of its own, its links are the fabric's
                emit("validate", None, "fabric", f"validate the fabric after {', '.join(wave.switches)}'s firmware",
                     ("clusterforge", "validate", self.env, "--fabric-only", *_switch_arg(wave.switches)))
            resumed = ([h for h in back if h in self.old.nodes and self.new.nodes[h].role == "compute"
                        and h not in self.g.sms] if takes_many(policy.resume) else [])
            if resumed:  # a `{hosts}` resume hook: the wave's compute back in one call
                [(_, argv)] = hook_calls(policy.resume, resumed, DAY2_REASON)
                emit("resume", self._one_rack(resumed), hostlist(resumed), f"resume {_hosts_text(resumed)}", argv)
            for h in back:
                node = self.new.nodes[h]
                if h not in self.old.nodes or h in resumed:
                    continue
                if node.role == "compute" and policy.resume:
                    [(_, argv)] = hook_calls(policy.resume, [h], DAY2_REASON)
                    emit("resume", node.rack, h, "resume", argv)
                else:
                    emit("return", node.rack, h, "resume" if node.role == "compute" else "return to service")
                mine = [t for t in self.g.targets.get(h, ()) if t in self.g.takeover]
                if mine and h in self.new.nodes:  # back on their own server once it is validated and in service
                    emit("failback", node.rack, h, f"fail {', '.join(mine)} back to {h} (unmount them on "
                         f"{', '.join(sorted({self.g.takeover[t] for t in mine}))}, mount them on {h}; `lctl dl` on "
                         f"{h} lists them UP)")
                if h in self.g.sms:
                    in_service.add(h)
        return steps

    def _firmware_steps(self, wave: Wave, out_hosts: list[str], emit: _Emit) -> None:
        """The wave's firmware work (day2/firmware.py), after its deploys and before its validation: per bumped
        HCA/DPU model one flash over the wave's hosts that carry it, then its activation (`mlxfwreset` per card,
        or one reboot per host that needs one, which activates every card it holds); a flashed switch from its
        OS by hand (`upgrade`), or through the fabric (`flash` and `activate`)."""
        flashed: dict[str, list[Bump]] = {}
        for b in self.fw_hca:
            hosts = [h for h in out_hosts if h in b.target_set and h in self.new.nodes
                     and (h, b.model) not in self.fw_done]
            if not hosts:
                continue
            self.fw_done.update((h, b.model) for h in hosts)
            how = activation(self.new, b.model)
            emit("flash", self._one_rack(hosts), _hosts_text(hosts),
                 f"flash firmware {b} from {staged_path(b.image) if b.image else 'the pin image (none named)'}, "
                 f"staged on each host (then {how})",
                 flash_argv(self.env, b, hosts=hostlist(hosts)))
            for h in hosts:
                flashed.setdefault(h, []).append(b)
        reboot = [h for h in flashed if any(activation(self.new, b.model) == "reboot" for b in flashed[h])]
        rebooted = set(reboot)
        for b in self.fw_hca:
            hosts = [h for h in flashed if b in flashed[h] and h not in rebooted]
            if hosts and activation(self.new, b.model) == "mlxfwreset":
                emit("activate", self._one_rack(hosts), _hosts_text(hosts),
                     f"activate {b.model} firmware {b.new}: mlxfwreset each flashed card (the host stays up)",
                     activate_argv(self.env, "mlxfwreset", hosts=hostlist(hosts), model=b.model))
        if reboot:
            emit("activate", self._one_rack(reboot), _hosts_text(reboot),
                 "activate the new firmware: reboot (" + ", ".join(sorted({b.model for h in reboot for b in flashed[h]
                                                                             if activation(self.new, b.model)
                                                                             == "reboot"})) + " needs it)",
                 activate_argv(self.env, "reboot", hosts=hostlist(reboot)))
        for sw in wave.switches:
            b = self.fw_switch[sw]
            rack = self._rack_of(sw, self.new)
            if by_hand(self.new, b.model):
                image = (f"image {b.image}" if b.image
                         else f"the vendor's {b.model} image of that version (the pin names none)")
                emit("upgrade", rack, sw, f"update {sw}'s firmware ({b}) from its switch OS, {image}; it reboots: "
                     "confirm once it is back with its links up")
            else:
                emit("flash", rack, sw, f"flash {sw}'s firmware ({b}) through the fabric (flint -d lid-<LID> burn)",
                     flash_argv(self.env, b, switch=sw))
                emit("activate", rack, sw, f"activate {sw}'s firmware {b.new}: flint swreset through the fabric",
                     activate_argv(self.env, "swreset", switch=sw))

    def _one_rack(self, hosts: list[str]) -> str | None:
        racks = {self._rack_of(h, self.new) for h in hosts}
        return racks.pop() if len(racks) == 1 else None

    def _deploy_steps(self, todo: list[HostChange], detail: dict[str, HostChange], emit: _Emit,
                      rack_order: list[str]) -> None:
        """One `deploy --limit <every host of the wave>` per set of components (the deploy runs its hosts in
        parallel inside), its limit written as a hostlist (`gpu[00001-02048]`), hosts in floor order."""
        groups_: dict[tuple[str, ...], list[HostChange]] = {}
        for h in todo:
            comps = [c for c in h.component_names if c != "opensm"]
            if "ofed" in comps and "lustre" not in comps and self._has_lustre(h.host):
                comps.append("lustre")  # the Lustre client modules are rebuilt against the new OFED
            if comps:
                groups_.setdefault(tuple(comps), []).append(h)
        order = {r: i for i, r in enumerate(rack_order)}
        for names, changes in sorted(groups_.items(), key=lambda kv: min(order.get(h.rack, 1 << 30)
                                                                        for h in kv[1])):
            hosts = [h.host for h in sorted(changes, key=lambda h: order.get(h.rack, 1 << 30))]
            argv = ("clusterforge", "deploy", self.env, "--yes", "--limit", hostlist(hosts),
                    *(x for c in names for x in ("--component", c)))
            whats = list(dict.fromkeys(self._deploy_what(detail[h], names) for h in hosts))
            what = " | ".join(whats[:3]) + (f" | and {len(whats) - 3} other variant(s)" if len(whats) > 3 else "")
            reboot = " (reboots)" if any(detail[h].reboot for h in hosts) else ""
            racks = {detail[h].rack for h in hosts}
            emit("deploy", racks.pop() if len(racks) == 1 else None, _hosts_text(hosts),
                 f"deploy {', '.join(names)}{reboot}: {what}", argv)

    @staticmethod
    def _deploy_what(first: HostChange, names: tuple[str, ...]) -> str:
        if first.change == "added":
            return "a new host, every component"
        what = "; ".join(str(c) for c in first.components if c.component in names)
        if "lustre" in names and "lustre" not in first.component_names:
            what += "; lustre: client rebuilt against the new OFED"
        return what

    def _has_lustre(self, host: str) -> bool:
        node = self.new.nodes.get(host)
        if node is None:
            return False
        for fs in self.new.inv.lustre:
            if host in fs.servers or fs.clients == "all" or (fs.clients == "compute" and node.role == "compute"):
                return True
        return False

    def _rack_order(self) -> list[str]:
        def key(index: Index, name: str) -> tuple[int, int, str]:
            rack = index.racks[name]
            rows = {r.name: r.index for r in index.inv.site.rows}
            return (rows.get(rack.row, 1 << 30), rack.position, name)

        new = sorted(self.new.racks, key=lambda r: key(self.new, r))
        gone = sorted((r for r in self.old.racks if r not in self.new.racks), key=lambda r: key(self.old, r))
        known = set(new) | set(gone)
        stray = sorted({t.rack for t in self.tasks if t.rack is not None and t.rack not in known})
        return [*new, *gone, *stray]


def _parallel(steps: list[Step], compute: set[str]) -> list[Step]:
    """Mark each run of two or more consecutive machine steps that may run at the same time: drain or resume
    hooks of compute nodes (a wave's hosts go out, or come back, together; the caps hold for the whole
    wave), and a wave's deploys (one per set of components: disjoint hosts). The group is the number of
    its first step; everything else runs alone, in order."""
    out: list[Step] = []
    i = 0
    while i < len(steps):
        step = steps[i]
        j = i + 1
        if step.phase in PARALLEL_PHASES and (step.phase == "deploy" or step.subject in compute):
            while j < len(steps) and steps[j].phase == step.phase and (
                    step.phase == "deploy" or steps[j].subject in compute):
                j += 1
        if j - i > 1:
            out += [dataclasses.replace(s, group=step.n) for s in steps[i:j]]
        else:
            out.append(step)
        i = j
    return out


def _commissioning(before: str, after: str, sensors: int) -> list[str]:
    if after == "air":
        return [f"cooling {before} -> air: the liquid loop is drained and capped, airflow verified"]
    checks = [f"leak test of the {after} loop at operating pressure (cooling {before} -> {after})"]
    checks.append(f"verify the rack's {sensors} leak sensor(s) report and alarm" if sensors
                  else "verify the leak sensors report and alarm (the rack declares none: leak_sensors 0)")
    checks.append("verify coolant flow and inlet/outlet temperatures under load before the rack returns")
    return checks


def _port(key: PortKey) -> str:
    device, hca, port = key
    return f"{device}/{hca}/{port}" if hca else f"{device}/{port}"


def _relabel(c: CableChange) -> str:
    assert c.old is not None and c.new is not None
    parts = []
    if c.old.id != c.new.id:
        parts.append(f"id {c.old.id} -> {c.new.id}")
    if c.old.label != c.new.label:
        parts.append(f"label {c.old.label or '-'} -> {c.new.label or '-'}")
    return "relabel: " + ", ".join(parts)


def _u(place: tuple[str, int] | None) -> str:
    return "?" if place is None else f"{place[0]} U{place[1]}"


def _pl(place: tuple[str, int] | None) -> str:
    return "?" if place is None else f"{place[0]} position {place[1]}"


def _model(index: Index, d: DeviceChange) -> str:
    if d.kind == "switch" and d.name in index.switches:
        return index.switches[d.name].model
    if d.kind == "node" and d.name in index.nodes:
        return index.nodes[d.name].profile or ""
    return ""


def _reasons_text(reasons: list[str], most: int = 3) -> str:
    """A group's reasons, each once, in the order found; past `most`, how many more."""
    unique = list(dict.fromkeys(reasons))
    more = f"; and {len(unique) - most} more" if len(unique) > most else ""
    return "; ".join(unique[:most]) + more


def _hosts_text(hosts: list[str]) -> str:
    return hosts[0] if len(hosts) == 1 else f"{hosts[0]} .. {hosts[-1]} ({len(hosts)} hosts)"


def _value(v: object) -> str:
    """A field's value as a step says it: a number as a cable's length is printed (7, not 7.0)."""
    return f"{v:g}" if isinstance(v, float) else str(v)


def _switch_arg(switches: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """`--switch NAME` for a switch's firmware wave (one switch a wave): validate checks that switch's firmware
    alone, since the bump's other switches are still to come."""
    return ("--switch", switches[0]) if len(switches) == 1 else ()
