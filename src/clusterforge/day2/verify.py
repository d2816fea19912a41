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
  `handover`), and the master's OpenSM is not retired (its node a subnet manager no more: the fabric deploy
  stops it, deploy/retire.py) while it is the master; Lustre servers one per failover pair, each serving no
  target when it goes out (its partner took them over: `failover`, the partner in service) and its targets back
  on it by the end
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

from ..inventory.selection import SelectionError, limit_tokens, select_nodes
from ..model.hooks import DAY2_REASON, hook_calls
from ..model.index import Index
from ..util.hostlist import HostlistError, expand
from .steps import PARALLEL_PHASES, ChangePlan, Step
from .verify_firmware import FirmwareRules
from .verify_floor import FloorRules
from .verify_state import OUT, PlanRejected, Violation, physical, step_arg

__all__ = ["PlanRejected", "Violation", "check_plan", "verify"]


class _Replay(FloorRules, FirmwareRules):
    """Each step's phase is a method (`_<phase>`): the floor's in verify_floor.py, firmware's in
    verify_firmware.py, the hosts' and machine steps' here."""

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
                    limit = step_arg(s.argv, "--limit")
                    try:
                        mine = set(select_nodes(self.new, limit_tokens(limit))) if limit is not None else set()
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
        if partner is not None and s.host.get(partner) in OUT:
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
        if s.host.get(host) not in OUT:
            self.bad("RESUME", f"{host} is resumed but was not out ({s.host.get(host, 'absent')})")
            return
        if host not in s.validated:
            self.bad("RESUME", f"{host} is resumed before a validation that covers it")
        rack = s.at.get(host, ("?", 0))[0]
        if rack in self.cooling and rack not in s.commissioned:
            self.bad("RESUME", f"{host} is resumed before rack {rack} is commissioned")
        s.host[host] = "in"
        self._counted_back(host)

    def _resume(self, step: Step) -> None:
        for host in self._hooked(step, self.new.inv.deploy.reboot.resume):
            self._back(step, host)

    def _return(self, step: Step) -> None:
        self._back(step)

    # -- machine steps ------------------------------------------------------------------------
    def _learn(self, step: Step) -> None:
        s = self.s
        if step.argv[:2] != ("clusterforge", "learn"):
            self.bad("LEARN", "a learn step must run `clusterforge learn`")
        cabled = {k[0] for ends in s.plugged for k in ends}
        required = set((step_arg(step.argv, "--require") or "").split(",")) - {""}
        for d in sorted(required):
            if d not in cabled:
                self.bad("LEARN", f"{d}'s GUID is learned before it is cabled")
        s.learned |= {d for d in cabled if d in s.at and (d not in self.hw_changed or d in s.hw_done)}

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
        new_sms = {sm.node for sm in self.new.inv.opensm.sm_nodes} if self.new.inv.opensm else set()
        master, limit = self.s.master, step_arg(step.argv, "--limit")
        try:  # the hosts as `_deploy` reads them (which reports a --limit that names nothing)
            hosts = set(select_nodes(self.new, limit_tokens(limit))) if limit is not None else set()
        except (HostlistError, SelectionError):
            hosts = set()
        if master is not None and master not in new_sms and master in hosts:
            self.bad("HA", f"{master}'s OpenSM is retired (a subnet manager no more) while it is the master: a "
                           "standby must take over first")
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
            if h is None or (h is not c and physical(h) != physical(c)):
                same = False
                break
        if not same:
            want = {frozenset((c.a.key, c.b.key)): c for c in new.inv.cables}
            want_p = {k: physical(c) for k, c in want.items()}
            have_p = {k: physical(c) for k, c in have.items()}
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


def verify(plan: ChangePlan, old: Index, new: Index) -> list[Violation]:
    """Every rule the plan breaks, in step order (empty: the plan is proven)."""
    return _Replay(plan, old, new).run()


def check_plan(plan: ChangePlan, old: Index, new: Index) -> None:
    """Raise PlanRejected when the plan breaks a rule."""
    violations = verify(plan, old, new)
    if violations:
        raise PlanRejected(violations)
