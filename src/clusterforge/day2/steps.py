"""The change plan as data: numbered steps, and how it prints (text, JSON). Pure."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from ..model.cabling import Cable
from .host_diff import HostChange
from .inventory_diff import InventoryDiff

Phase = Literal["drain", "takeout", "handover", "failover", "unplug", "remove", "install", "trunks", "plug", "relabel",
                "commission", "learn", "deploy", "flash", "activate", "upgrade", "fabric", "validate", "resume",
                "return", "failback"]
PHASES: tuple[Phase, ...] = get_args(Phase)
# Phases whose steps a person does (or confirms): `apply` waits for the operator. Every other phase is a
# machine step with the exact argv to run. A phase is always one or the other:
#   takeout   a host without a drain hook (servers, SMs; compute when deploy.reboot.drain is empty) is taken
#             out of service by the operator
#   handover  a standby subnet manager becomes master before the master goes out
#   failover  a Lustre server's failover partner takes over its targets before it goes out
#   failback  the targets return to their own server once it is back
#   return    such a host is returned to service (no resume hook)
#   commission  rack or device commissioning checks (cold-plate leak test, sensors verified)
#   upgrade   a managed switch's firmware updated from its own OS (`fw_tool: switch-os`); it reboots
# (`flash` and `activate` are machine steps: `clusterforge firmware flash|activate`, day2/firmware.py)
MANUAL_PHASES: frozenset[Phase] = frozenset({"takeout", "handover", "failover", "unplug", "remove", "install",
                                             "trunks", "plug", "relabel", "commission", "upgrade", "return",
                                             "failback"})
# Machine steps that may run at the same time when the plan marks them so (`Step.group`): a run of drain or
# resume hooks of compute nodes, or a wave's deploys over disjoint hosts (day2/changeplan.py marks them,
# day2/verify.py's PARALLEL rule checks them, day2/apply.py runs them together).
PARALLEL_PHASES: frozenset[Phase] = frozenset({"drain", "deploy", "resume"})
# A `trunks` step pulls a trunk when its action starts with this (off its panels, before they are taken out),
# else it lays one (once its panels stand where the new inventory puts them).
PULL_TRUNK = "pull the MPO-24 trunk"


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a change plan. Machine steps (`manual` False) carry the exact argv to run (drain/resume
    hooks with `{host}` substituted, clusterforge commands as `("clusterforge", ...)`); manual steps are
    done by a person and confirmed (their argv is empty). Consecutive machine steps with the same `group`
    (the number of the group's first step) are independent and may run at the same time."""

    n: int
    phase: Phase
    rack: str | None  # None: fabric-wide
    subject: str
    action: str
    argv: tuple[str, ...] = ()
    group: int | None = None  # parallel group: the first step's number; None: runs alone

    @property
    def manual(self) -> bool:
        return self.phase in MANUAL_PHASES

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "phase": self.phase, "rack": self.rack, "subject": self.subject,
                "action": self.action, "argv": list(self.argv), "manual": self.manual,
                "parallel_group": self.group}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Step:
        """A step as `to_dict` wrote it; ValueError when it is not one (unknown phase, `manual` that
        contradicts the phase, an argv that is not a list of strings)."""
        phase = data.get("phase")
        if phase not in PHASES:
            raise ValueError(f"step {data.get('n')!r}: unknown phase {phase!r}")
        argv = data.get("argv", [])
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise ValueError(f"step {data.get('n')!r}: argv must be a list of strings")
        n, rack, subject, action = data.get("n"), data.get("rack"), data.get("subject"), data.get("action")
        if not isinstance(n, int) or not isinstance(subject, str) or not isinstance(action, str) \
                or not (rack is None or isinstance(rack, str)):
            raise ValueError(f"step {n!r}: n, rack, subject and action are required")
        group = data.get("parallel_group")
        if group is not None and (not isinstance(group, int) or isinstance(group, bool) or group < 1):
            raise ValueError(f"step {n}: parallel_group must be a step number or null")
        step = cls(n, phase, rack, subject, action, tuple(argv), group)
        if step.manual and group is not None:
            raise ValueError(f"step {n}: a manual step ({phase}) runs alone (no parallel_group)")
        if "manual" in data and data["manual"] is not step.manual:
            raise ValueError(f"step {n}: manual={data['manual']!r} contradicts phase {phase!r}")
        if step.manual and step.argv:
            raise ValueError(f"step {n}: a manual step ({phase}) has no argv")
        return step


@dataclass(frozen=True)
class ChangePlan:
    env: str
    diff: InventoryDiff
    hosts: tuple[HostChange, ...]
    steps: tuple[Step, ...]
    drained: tuple[str, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())
    firmware: tuple[str, ...] = field(default=())  # the pins bumped, as text (day2/firmware.py)

    @property
    def empty(self) -> bool:
        return not self.steps

    def summary(self) -> dict[str, Any]:
        devices: dict[str, dict[str, int]] = {}
        for d in self.diff.devices:
            devices.setdefault(d.kind, {}).setdefault(d.change, 0)
            devices[d.kind][d.change] += 1
        cables: dict[str, int] = {}
        for c in self.diff.cables:
            cables[c.change] = cables.get(c.change, 0) + 1
        return {
            "devices": devices, "cables": cables,
            "hosts_to_deploy": sum(1 for h in self.hosts if h.change != "removed"),
            "hosts_to_drain": len(self.drained),
            "reboots": sum(1 for h in self.hosts if h.reboot),
            "racks": sorted({s.rack for s in self.steps if s.rack is not None}),
            "steps": len(self.steps),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "env": self.env, "changes": not self.empty, "summary": self.summary(), "warnings": list(self.warnings),
            "firmware": list(self.firmware),
            "devices": [{"kind": d.kind, "name": d.name, "change": d.change, "old_place": _place(d.kind, d.old_place),
                         "new_place": _place(d.kind, d.new_place), "fields": list(d.fields)}
                        for d in self.diff.devices],
            "cables": [{"change": c.change, "id": c.id, "old": _cable(c.old), "new": _cable(c.new),
                        "fields": list(c.fields)} for c in self.diff.cables],
            "hosts": [{"host": h.host, "rack": h.rack, "change": h.change, "reboot": h.reboot,
                       "disruptive": list(h.disruptive), "components": [str(c) for c in h.components]}
                      for h in self.hosts],
            "steps": [s.to_dict() for s in self.steps],
        }

    def lines(self) -> list[str]:
        """The plan as text: a summary line, then each step under its rack or phase heading."""
        s = self.summary()
        if self.empty:
            return [f"{self.env}: no change"]
        cab = ", ".join(f"{n} {k}" for k, n in sorted(s["cables"].items())) or "none"
        dev = "; ".join(f"{kind}: " + ", ".join(f"{n} {ch}" for ch, n in sorted(v.items()))
                        for kind, v in sorted(s["devices"].items())) or "none"
        out = [f"{self.env}: devices {dev}; cables {cab}; {s['hosts_to_deploy']} host(s) to deploy, "
               f"{s['hosts_to_drain']} to drain, {s['reboots']} reboot(s); {s['steps']} steps in "
               f"{len(s['racks'])} rack(s)" + (f"; firmware {', '.join(self.firmware)}" if self.firmware else "")]
        out += [f"warning: {w}" for w in self.warnings]
        heading = None
        for step in self.steps:
            head = f"rack {step.rack}" if step.rack else step.phase
            if head != heading:
                out.append(f"== {head}")
                heading = head
            cmd = f"  $ {shlex.join(step.argv)}" if step.argv else ""
            together = f" (parallel group {step.group})" if step.group is not None else ""
            out.append(f"{step.n:>4}. {step.phase:<10} {step.subject}: {step.action}{together}{cmd}")
        return out


def _place(kind: str, p: tuple[str, int] | None) -> dict[str, Any] | None:
    """Where a device is: rack and U; a rack: row and position; a trunk: its two panels."""
    if p is None:
        return None
    if kind == "rack":
        return {"row": p[0], "position": p[1]}
    if kind == "trunk":
        return {"panels": p[0]}
    return {"rack": p[0], "u": p[1]}


def _cable(c: Cable | None) -> dict[str, Any] | None:
    """A cable as the inventory writes it: ends as `node/hca/port` and `switch/port`."""
    if c is None:
        return None
    return {**c.model_dump(mode="json", exclude_defaults=True), "a": str(c.a), "b": str(c.b)}
