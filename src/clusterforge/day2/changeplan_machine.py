"""The change planner's machine steps within a wave (day2/changeplan.py): the deploys, one per set of
components over the wave's hosts, and the firmware work (flash, activate; a switch by hand or through the
fabric). Pure."""

from __future__ import annotations

from ..firmware.images import staged_path
from ..util.hostlist import compress as hostlist
from .changeplan_state import Emit, PlannerState
from .firmware import Bump, activate_argv, activation, by_hand, flash_argv
from .host_diff import HostChange
from .plan_text import hosts_text
from .waves import Wave


class MachineSteps(PlannerState):
    def _firmware_steps(self, wave: Wave, out_hosts: list[str], emit: Emit) -> None:
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
            emit("flash", self._one_rack(hosts), hosts_text(hosts),
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
                emit("activate", self._one_rack(hosts), hosts_text(hosts),
                     f"activate {b.model} firmware {b.new}: mlxfwreset each flashed card (the host stays up)",
                     activate_argv(self.env, "mlxfwreset", hosts=hostlist(hosts), model=b.model))
        if reboot:
            emit("activate", self._one_rack(reboot), hosts_text(reboot),
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

    def _deploy_steps(self, todo: list[HostChange], detail: dict[str, HostChange], emit: Emit,
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
            emit("deploy", racks.pop() if len(racks) == 1 else None, hosts_text(hosts),
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
