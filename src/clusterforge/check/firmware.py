"""Firmware pins (docs/firmware.md): each pin names a catalog model of its kind, once; a pinned model is one
the inventory uses (a pin for hardware nobody has is a typo until proven otherwise)."""

from __future__ import annotations

from ..model.index import Index
from ..util.errors import InventoryIssue


def check(index: Index) -> list[InventoryIssue]:
    fw = index.inv.firmware
    if fw is None:
        return []
    cat = index.cat
    used_hcas = {h.model for hw in index.hardware.values() for h in hw.hcas}
    used_hcas |= {d.model for hw in index.hardware.values() for d in hw.dpus}  # DPUs are pinned there too
    used_switches = {sw.model for sw in index.inv.switches}
    out: list[InventoryIssue] = []
    for section, pins, known, used, kind in (("hcas", fw.hcas, cat.hcas, used_hcas, "HCA/DPU"),
                                              ("switches", fw.switches, cat.switches, used_switches, "switch")):
        seen: dict[str, int] = {}
        for i, pin in enumerate(pins):
            path = ("firmware", section, i, "model")
            if pin.model not in known:
                out.append(InventoryIssue(path, f"unknown {kind} model {pin.model!r} (catalog: "
                                          f"{', '.join(sorted(known))})", rule="INV-HW"))
            elif pin.model not in used:
                out.append(InventoryIssue(path, f"{pin.model!r} is pinned but no {kind} of the inventory is one "
                                          f"(in use: {', '.join(sorted(used)) or 'none'})", rule="INV-REF"))
            if pin.model in seen:
                out.append(InventoryIssue(path, f"{pin.model!r} is pinned twice (first at firmware.{section}"
                                          f"[{seen[pin.model]}])", rule="INV-DUP"))
            seen.setdefault(pin.model, i)
    return out
