"""Reboots are never silent: the inventory's policy decides, drain/resume hooks bracket each one.

`mode: none` only reports the hosts that need one; `when-needed` reboots them (all at once);
`rolling-by-rack` reboots one rack at a time. Each reboot: drain hook (argv, `{host}`
substituted, run on the control node) -> reboot -> wait for SSH -> verify the loaded
module -> resume hook. A host that does not come back within `timeout_s` fails.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..model.inventory import RebootPolicy
from .component import HostPlan

HOOK_TIMEOUT_S = 300


@dataclass
class RebootOutcome:
    host: str
    done: bool
    message: str


def hook_argv(template: Sequence[str], host: str) -> list[str]:
    return [part.replace("{host}", host) for part in template]


def run_hook(template: Sequence[str], host: str) -> None:
    if template:
        subprocess.run(hook_argv(template, host), check=True, timeout=HOOK_TIMEOUT_S, capture_output=True)


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
        for p in wave:
            try:
                run_hook(policy.drain, p.name)
            except (subprocess.SubprocessError, OSError) as exc:
                out.append(RebootOutcome(p.name, False, f"drain hook failed, not rebooted: {exc}"))
                continue
            error = reboot_and_verify(p, time.monotonic() + policy.timeout_s)
            if error is not None:
                out.append(RebootOutcome(p.name, False, f"reboot: {error} (left drained)"))
                continue
            try:
                run_hook(policy.resume, p.name)
            except (subprocess.SubprocessError, OSError) as exc:
                out.append(RebootOutcome(p.name, False, f"rebooted, resume hook failed: {exc}"))
                continue
            out.append(RebootOutcome(p.name, True, "rebooted, module verified, resumed"))
    return out
