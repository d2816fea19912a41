"""The change planner's physical work (day2/changeplan.py, step 1): every cable unplugged and plugged, device
and panel taken out and installed, rack moved or re-cooled, trunk pulled and laid, with the hosts each
interrupts. Pure."""

from __future__ import annotations

from ..model.cabling import Cable
from .changeplan_state import INTERRUPTING, RACK_DRAIN_FIELDS, PlannerState
from .host_diff import LEAVES
from .inventory_diff import LEARN_FIELDS, CableChange, DeviceChange, hardware_fields
from .plan_text import commissioning_checks, model_of, place_text, relabel_text, slot_text, value_text
from .steps import PULL_TRUNK


class WorkFinder(PlannerState):
    def _cables(self) -> None:
        old, new = self.old, self.new
        what = {"moved": "unplug (it moves)", "replaced": "unplug (a new cable replaces it)",
                "rerouted": "unplug at the patch panels (re-patched)", "removed": "unplug and remove"}
        touched: set[str] = set()  # old ids already unplugged
        relabel_of: dict[str, CableChange] = {}
        for c in self.diff.cables:
            if c.change in INTERRUPTING and c.old is not None:
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
            self._task("relabel", self._rack_of(ch.new.a.device, new), ch.new.id, relabel_text(ch),
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
            self._task("remove", d.old_place[0], d.name, f"take out switch at {slot_text(d.old_place)} ({why})",
                       keys=(f"dev:{d.name}", *self._slots(d.name, d.old_place, self.old)))
            self._task("install", d.new_place[0], d.name,
                       f"install the replacement {sw.model} at {slot_text(d.new_place)}",
                       keys=(f"dev:{d.name}", *self._slots(d.name, d.new_place, self.new)))
            self.learn.add(d.name)
            return
        if d.change in ("removed", "moved") and d.old_place is not None:
            verb = "take out" if d.change == "removed" else "take out (it moves to " + slot_text(d.new_place) + ")"
            hosts = {d.name} if d.kind == "node" else set()
            if d.kind == "node":
                self._interrupt(d.name, "it is taken out of its rack" if d.change == "moved" else LEAVES)
            keys = (f"dev:{d.name}", *self._slots(d.name, d.old_place, self.old),
                    *((f"rack:{d.old_place[0]}",) if old_rack_gone else ()))
            self._task("remove", d.old_place[0], d.name, f"{verb} {noun} at {slot_text(d.old_place)}", hosts, keys)
        if d.change in ("added", "moved") and d.new_place is not None:
            model = model_of(self.new, d)
            hosts = {d.name} if d.kind == "node" and d.change == "moved" else set()
            keys = (f"dev:{d.name}", *self._slots(d.name, d.new_place, self.new),
                    *((f"rack:{d.new_place[0]}",) if new_rack_new else ()))
            self._task("install", d.new_place[0], d.name, f"install {noun} at {slot_text(d.new_place)}"
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
            self._task("install", d.name, d.name, f"place rack in row {place_text(d.new_place)}", keys=key)
        elif d.change == "removed":
            self._task("remove", d.name, d.name,
                       f"take the rack out of row {place_text(d.old_place)} (it is empty now)",
                       keys=key, last=True)
        elif d.change == "moved":
            # it rolls with its devices in it: everything in it out of service and uncabled (its panels'
            # trunks pulled), moved, then cabled again (plug), learned and validated before anyone resumes
            inside = sorted(n for n, rack in self.inside.items() if rack == d.name)
            aboard = {n for n in inside if n in self.old.nodes}
            for h in sorted(aboard):
                self._interrupt(h, f"rack {d.name} moves")
            what = f" with {len(inside)} device(s) in it" if inside else ""
            self._task("install", d.name, d.name, f"move the rack{what}: row {place_text(d.old_place)} -> "
                       f"{place_text(d.new_place)}", aboard, (*key, *(f"dev:{n}" for n in inside)))
            if d.fields:
                self._rack(DeviceChange("rack", d.name, "changed", d.new_place, d.new_place, d.fields))
        else:
            before = self.old.racks[d.name].model_dump(mode="json")
            after = self.new.racks[d.name].model_dump(mode="json")
            values = ", ".join(f"{f} {before.get(f)} -> {after.get(f)}" for f in d.fields)
            drains = [f for f in d.fields if f in RACK_DRAIN_FIELDS]
            hosts: set[str] = set()
            if drains:
                hosts = {n.name for n in self.old.inv.nodes if n.rack == d.name}
                hosts |= {n.name for n in self.new.inv.nodes if n.rack == d.name and n.name in self.old.nodes}
                for h in sorted(hosts):
                    self._interrupt(h, f"rack {d.name}: {values}")
            self._task("install", d.name, d.name, f"rack settings: {values}", hosts, key)
            if "cooling" in d.fields:
                new_rack = self.new.racks[d.name]
                for check in commissioning_checks(str(before.get("cooling")), new_rack.cooling, new_rack.leak_sensors):
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
        return ", ".join(f"{f} {value_text(a.get(f))} -> {value_text(b.get(f))}" if f in a else f for f in d.fields)
