"""`apply --lab-technician`: the physical steps of a change plan done in a running lab's simulated fabric.

Each physical step of the plan becomes the technician's work in ibsim (lab/technician.py), named
by the inventory as the step names it:

* `unplug CABLE`: the cable's ends before the change (the plan's `cables[].old`, else the inventory's
  cable) are looked up in the lab; the cable must be plugged there; it is pulled at its `a` end;
* `plug CABLE`: plugged between its ends in the new inventory (both ports must be free);
* both look at ibsim's live cabling first: a cable already out (or already in as wanted) is left so,
  so a step interrupted between the fabric's change and the journal's line is done again harmlessly;
* `install SWITCH` of a switch the plan replaces (its GUID changes): the switch becomes a new box
  with the new inventory's GUID for it (locked or declared), or, when the new inventory leaves it to
  `learn`, a fresh one;
* `remove SWITCH`: its cables must all be out already (ibsim keeps the node: it is the empty slot);
* the rest (nodes taken out or installed: their containers stay; relabel; trunks): nothing to do in a
  simulated fabric, said so in the journal.

Lab only: `apply` offers it only when the plan's environment has a running lab.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..lab import LabState, PortRef
from ..lab.lab import technician
from ..lab.technician import Technician
from ..model.base import PortRef as InvPortRef
from ..model.index import Index
from ..util.guid import format_guid
from .planfile import PlanFile
from .steps import Step


def lab_port(end: InvPortRef | str) -> PortRef:
    """An inventory port (`node/hca/port`, `switch/port`) as the lab names it (node description, port)."""
    ref = end if isinstance(end, InvPortRef) else InvPortRef.model_validate(end)
    return PortRef(ref.device if ref.hca is None else f"{ref.device} {ref.hca}", ref.port)


def new_switch_guid(name: str, salt: str) -> str:
    """A GUID for a replacement switch the inventory does not know yet (as if read off the new box)."""
    low = int.from_bytes(hashlib.sha256(f"{name}#{salt}".encode()).digest()[:4], "big")
    return format_guid(0x0002C903 << 32 | low)


@dataclass
class LabTechnician:
    plan: PlanFile
    state: LabState
    load: Any  # () -> Index: the new inventory as it is now (learn may have locked GUIDs since)

    def hands(self) -> Technician:
        return technician(self.state)

    def __call__(self, step: Step) -> str:
        tech = self.hands()
        if step.phase == "unplug":
            a, b = self._ends(step.subject, "old")
            did = tech.ensure_unplugged(a, b)
            return f"{'unplugged' if did else 'already out:'} {step.subject} ({a.device} port {a.port} - " \
                   f"{b.device} port {b.port})"
        if step.phase == "plug":
            a, b = self._ends(step.subject, "new")
            did = tech.ensure_plugged(a, b)
            return f"{'plugged' if did else 'already in:'} {step.subject} ({a.device} port {a.port} - " \
                   f"{b.device} port {b.port})"
        index: Index = self.load()
        if step.phase == "install" and step.subject in index.switches and self._replaced(step.subject):
            guid = index.inv.guid_locks.switches.get(step.subject) or index.switches[step.subject].guid \
                or new_switch_guid(step.subject, self.plan.digest)
            tech.set_guid(step.subject, guid)
            return f"installed a new {step.subject} (GUID {guid})"
        if step.phase == "remove" and step.subject in tech.net.nodes:
            node = tech.net.resolve(step.subject)
            left = sorted(a.port for a in tech.peers() if a.node == node)
            if left:
                raise ValueError(f"{step.subject} still has cables in ports {left}: unplug them first")
            return f"took {step.subject} out (no cable left on it)"
        return f"nothing to do in the simulated fabric ({step.phase} {step.subject})"

    def _replaced(self, switch: str) -> bool:
        for d in self.plan.doc.get("devices", []):
            if d.get("kind") == "switch" and d.get("name") == switch:
                return any(str(f).startswith("guid") for f in d.get("fields", [])) or d.get("change") in (
                    "added", "replaced")
        return False

    def _ends(self, cable_id: str, side: str) -> tuple[PortRef, PortRef]:
        entry = self.plan.cable(cable_id)
        if entry is not None and isinstance(entry.get(side), dict):
            return lab_port(entry[side]["a"]), lab_port(entry[side]["b"])
        index: Index = self.load()
        cable = next((c for c in index.inv.cables if c.id == cable_id), None)
        if cable is None:
            raise ValueError(f"cable {cable_id}: neither the plan nor the inventory names it")
        return lab_port(cable.a), lab_port(cable.b)


def lab_technician(plan: PlanFile, state: LabState, env: Path) -> LabTechnician:
    from ..check.checked import load_checked

    return LabTechnician(plan, state, lambda: load_checked(env).index)
