"""The change plan as data: numbered steps, and how it prints (text, JSON). Pure."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Literal

from ..model.cabling import Cable
from .host_diff import HostChange
from .inventory_diff import InventoryDiff

Phase = Literal["drain", "unplug", "remove", "install", "trunks", "plug", "relabel", "deploy", "fabric",
                "validate", "resume"]
RACK_PHASES: tuple[Phase, ...] = ("drain", "unplug", "remove", "install", "plug", "relabel", "deploy")


@dataclass(frozen=True, slots=True)
class Step:
    n: int
    phase: Phase
    rack: str | None  # None: fabric-wide
    subject: str
    action: str
    argv: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "phase": self.phase, "rack": self.rack, "subject": self.subject,
                "action": self.action, "argv": list(self.argv)}


@dataclass(frozen=True)
class ChangePlan:
    env: str
    diff: InventoryDiff
    hosts: tuple[HostChange, ...]
    steps: tuple[Step, ...]
    drained: tuple[str, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())

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
               f"{len(s['racks'])} rack(s)"]
        out += [f"warning: {w}" for w in self.warnings]
        heading = None
        for step in self.steps:
            head = f"rack {step.rack}" if step.rack else step.phase
            if head != heading:
                out.append(f"== {head}")
                heading = head
            cmd = f"  $ {shlex.join(step.argv)}" if step.argv else ""
            out.append(f"{step.n:>4}. {step.phase:<8} {step.subject}: {step.action}{cmd}")
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
