"""The verifier's floor rules (SLOT, CABLE, and DRAIN where a device or cable is touched; day2/verify.py):
devices taken out of and installed into rack slots, racks moved and their settings, cables unplugged, plugged
and relabelled, trunks laid and pulled, racks commissioned. Pure."""

from __future__ import annotations

from .inventory_diff import cable_ends
from .steps import PULL_TRUNK, Step
from .verify_state import ReplayState


class FloorRules(ReplayState):
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
