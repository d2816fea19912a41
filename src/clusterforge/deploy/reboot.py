"""Reboots are never silent: the inventory's policy decides, drain/resume hooks bracket each one.

`mode: none` only reports the hosts that need one; `when-needed` reboots them (all at once);
`rolling-by-rack` reboots one rack at a time. Each reboot: drain hook (argv, `{host}`
substituted, run on the control node) -> reboot -> wait for SSH -> verify the loaded
module -> resume hook. A host that does not come back within `timeout_s` fails. A `{hosts}` hook
(deploy/hooks.py) drains the wave's hosts in one call, and resumes those that came back in one.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..model.hooks import REBOOT_REASON, hook_calls, takes_many
from ..model.inventory import RebootPolicy
from .component import HostPlan

HOOK_TIMEOUT_S = 300


@dataclass
class RebootOutcome:
    host: str
    done: bool
    message: str


def waves(plans: Sequence[HostPlan], policy: RebootPolicy) -> list[list[HostPlan]]:
    """Groups rebooted together: everything at once, or one rack at a time (in rack order)."""
    if policy.mode == "none" or not plans:
        return []
    if policy.mode == "when-needed":
        return [list(plans)]
    racks: dict[str, list[HostPlan]] = {}
    for p in plans:
        racks.setdefault(p.rack, []).append(p)
    return [racks[r] for r in sorted(racks)]


def reboot_hosts(plans: Sequence[HostPlan], policy: RebootPolicy,
                 reboot_and_verify: Callable[[HostPlan, float], str | None]) -> list[RebootOutcome]:
    """Apply the policy; `reboot_and_verify(plan, deadline)` reboots one host and returns an error or None."""
    if policy.mode == "none":
        return [RebootOutcome(p.name, False, "reboot needed; policy 'none': not rebooted") for p in plans]
    out: list[RebootOutcome] = []
    for wave in waves(plans, policy):
        # a `{hosts}` hook takes the wave at once; a `{host}` hook goes host by host: drain, reboot, resume
        group = takes_many(policy.drain) or takes_many(policy.resume)
        for hosts in [wave] if group else [[p] for p in wave]:
            out += _reboot_wave(hosts, policy, reboot_and_verify)
    return out


def _run_calls(template: Sequence[str], hosts: Sequence[str]) -> dict[str, str]:
    """Run the template's calls for `hosts`; host -> the error of the call that covered it (none: it ran)."""
    errors: dict[str, str] = {}
    for covered, argv in hook_calls(template, hosts, REBOOT_REASON):
        try:
            subprocess.run(argv, check=True, timeout=HOOK_TIMEOUT_S, capture_output=True)
        except (subprocess.SubprocessError, OSError) as exc:
            errors.update((h, str(exc)) for h in covered)
    return errors


def _reboot_wave(wave: Sequence[HostPlan], policy: RebootPolicy,
                 reboot_and_verify: Callable[[HostPlan, float], str | None]) -> list[RebootOutcome]:
    """Every host of `wave` drained (one call, or one a host), each rebooted, the ones back resumed."""
    out: dict[str, RebootOutcome] = {}
    undrained = _run_calls(policy.drain, [p.name for p in wave])
    back: list[str] = []
    for p in wave:
        if p.name in undrained:
            out[p.name] = RebootOutcome(p.name, False, f"drain hook failed, not rebooted: {undrained[p.name]}")
            continue
        error = reboot_and_verify(p, time.monotonic() + policy.timeout_s)
        if error is not None:
            out[p.name] = RebootOutcome(p.name, False, f"reboot: {error} (left drained)")
        else:
            back.append(p.name)
    unresumed = _run_calls(policy.resume, back)
    for h in back:
        out[h] = (RebootOutcome(h, False, f"rebooted, resume hook failed: {unresumed[h]}") if h in unresumed
                  else RebootOutcome(h, True, "rebooted, module verified, resumed"))
    return [out[p.name] for p in wave]  # in the wave's order
