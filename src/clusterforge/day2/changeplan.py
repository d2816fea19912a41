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

from ..model.hooks import DAY2_REASON, hook_calls, takes_many
from ..model.index import Index
from ..util.hostlist import compress as hostlist
from .changeplan_machine import MachineSteps
from .changeplan_state import AFTER_TRUNKS, BEFORE_TRUNKS
from .changeplan_work import WorkFinder
from .firmware import cabled_nodes, new_pins
from .host_diff import diff_hosts, left_behind
from .inventory_diff import diff_inventories
from .plan_text import hosts_text, reasons_text
from .steps import PARALLEL_PHASES, PULL_TRUNK, ChangePlan, Phase, Step
from .waves import Task, Wave, pack_waves, units


def change_plan(old: Index, new: Index, env: str, env_name: str) -> ChangePlan:
    """The ordered plan that takes the cluster built from `old` to `new`.

    `env` is the new inventory's path as the commands in the plan name it; `env_name` the
    environment's name in rendered files.
    """
    diff = diff_inventories(old, new)
    hosts = tuple(diff_hosts(old, new, env_name, diff))
    return _Planner(old, new, env, diff, hosts).build()


class _Planner(WorkFinder, MachineSteps):
    """Finds the work (changeplan_work.py), packs it into waves and orders each wave's steps; the deploys and
    firmware steps of a wave: changeplan_machine.py."""

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
        self._left_behind()
        waves = self._waves()
        self.wave_hosts = set(self.reasons)
        waves += self._switch_waves()
        steps = _parallel(self._ordered(waves), set(self.g.compute_rack))
        firmware = tuple(f"{b} ({len(b.targets)} {'host' if b.kind == 'hcas' else 'switch'}"
                         f"{'' if len(b.targets) == 1 else ('s' if b.kind == 'hcas' else 'es')})" for b in self.fw)
        return ChangePlan(self.env, self.diff, self.hosts, tuple(steps), tuple(self.reasons), tuple(self.warnings),
                          firmware)

    def _left_behind(self) -> None:
        """A warning per set of hosts the new inventory takes a service, file or pinned package away from: the
        host's deploy retires them (deploy/retire.py) from the deploy record of what it applied, so a node that
        stops being a subnet manager or an HSM agent has its OpenSM or lhsmd stopped and disabled; a host the
        record does not cover (deployed from elsewhere) keeps them, so the plan says what they are."""
        same: dict[tuple[tuple[str, ...], ...], list[str]] = {}
        for h in self.hosts:
            left = left_behind(h)
            if any(left):
                same.setdefault(left, []).append(h.host)
        for (services, files, pins), hosts in same.items():
            what = [f"stops and disables {', '.join(services)}" if services else "",
                    f"removes {len(files)} file(s) ({', '.join(files[:3])}{', ...' if len(files) > 3 else ''})"
                    if files else "",
                    f"releases the hold of {', '.join(pins)}" if pins else ""]
            self.warnings.append(f"{hostlist(hosts)}: the new inventory takes away what its deploy retires from the "
                                 f"deploy record: it {'; '.join(w for w in what if w)}; on a host the record does "
                                 "not cover (deployed from elsewhere), do that by hand")

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
                        why = wave.why or reasons_text([r for h in batched for r in self.reasons[h]])
                        [(_, argv)] = hook_calls(policy.drain, batched, DAY2_REASON)
                        emit("drain", self._one_rack(batched), hostlist(batched),
                             f"drain {hosts_text(batched)}: {why}", argv)
                for phase in phases:
                    for rack in rack_order:
                        tasks = by_rack.get(rack, {}).get(phase, [])
                        for t in sorted(tasks, key=lambda t: t.last):
                            emit(phase, rack, t.subject, t.action)

            trunk_tasks = by_rack.get(None, {}).get("trunks", [])
            if trunk_tasks:  # unplug -> pull trunks -> remove, install -> lay trunks -> plug
                racks(BEFORE_TRUNKS[:1], True)
                for t in trunk_tasks:
                    if t.action.startswith(PULL_TRUNK):
                        emit("trunks", None, t.subject, t.action)
                racks(BEFORE_TRUNKS[1:], False)
                for t in trunk_tasks:
                    if not t.action.startswith(PULL_TRUNK):
                        emit("trunks", None, t.subject, t.action)
                racks(AFTER_TRUNKS, False)
            else:
                racks((*BEFORE_TRUNKS, *AFTER_TRUNKS), True)
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
                new_sms = {sm.node for sm in self.new.inv.opensm.sm_nodes} if self.new.inv.opensm else set()
                if master in hosts and master not in new_sms:  # its deploy retires its OpenSM (deploy/retire.py)
                    standby = next((s for s in self.g.sms if s != master and s in new_sms and s in in_service), None)
                    if standby is not None:
                        emit("handover", None, standby, f"make {standby} the master subnet manager before {master}'s "
                             f"OpenSM is retired (raise its priority or stop OpenSM on {master}; `sminfo` shows "
                             f"{standby} MASTER)")
                        master = standby
                emit("fabric", None, hosts_text(hosts),
                     f"deploy OpenSM's files (the subnet manager re-reads them): {what}",
                     ("clusterforge", "deploy", self.env, "--yes", "--limit", hostlist(hosts), "--component", "opensm"))
            back = [h for h in out_hosts if h in self.new.nodes]
            if lastwave:
                if steps:
                    emit("validate", None, "fabric and hosts",
                         "validate against the new inventory; resume only when clean",
                         ("clusterforge", "validate", self.env))
            elif back:  # a switch's wave also checks that switch's firmware (its findings kept under --limit)
                emit("validate", None, hosts_text(back), f"validate wave {wi + 1}'s hosts against the new "
                     "inventory; resume them only when clean",
                     ("clusterforge", "validate", self.env, "--limit", hostlist(back), *_switch_arg(wave.switches)))
            elif wave.switches:  # a spine: no host of its own, its links are the fabric's
                emit("validate", None, "fabric", f"validate the fabric after {', '.join(wave.switches)}'s firmware",
                     ("clusterforge", "validate", self.env, "--fabric-only", *_switch_arg(wave.switches)))
            resumed = ([h for h in back if h in self.old.nodes and self.new.nodes[h].role == "compute"
                        and h not in self.g.sms] if takes_many(policy.resume) else [])
            if resumed:  # a `{hosts}` resume hook: the wave's compute back in one call
                [(_, argv)] = hook_calls(policy.resume, resumed, DAY2_REASON)
                emit("resume", self._one_rack(resumed), hostlist(resumed), f"resume {hosts_text(resumed)}", argv)
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


def _switch_arg(switches: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """`--switch NAME` for a switch's firmware wave (one switch a wave): validate checks that switch's firmware
    alone, since the bump's other switches are still to come."""
    return ("--switch", switches[0]) if len(switches) == 1 else ()
