"""The verifier's FIRMWARE rules (day2/verify.py; the bumps: day2/firmware.py): flashes at the pin's new
version on hosts out of service, downgrades only where allowed, switches one at a time with their nodes out,
activation as each card's catalog entry says (a switch by swreset). Pure."""

from __future__ import annotations

from ..firmware.images import version_key
from .firmware import ACTIVATE, FLASH, Bump, activation, by_hand, card_models
from .steps import Step
from .verify_state import ReplayState, step_arg


class FirmwareRules(ReplayState):
    def _bump_of(self, step: Step) -> Bump | None:
        model = step_arg(step.argv, "--model")
        if model is None and step.subject in self.fw_cabled:
            model = self.new.switches[step.subject].model if step.subject in self.new.switches else None
        switch = step_arg(step.argv, "--switch")
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
        version = step_arg(step.argv, "--version")
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
        switch = step_arg(step.argv, "--switch")
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
        how = step_arg(step.argv, "--how")
        switch = step_arg(step.argv, "--switch")
        targets = [switch] if switch is not None else self._limit(step, nodes_only=True) or []
        model = step_arg(step.argv, "--model")
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
