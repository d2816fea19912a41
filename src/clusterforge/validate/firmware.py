"""Firmware against the pins (docs/firmware.md): `mlxfwmanager --query` on a host, each card matched to its
declared HCA or DPU (by base GUID, which is the HCA's node GUID, where both are known; else by model), checked
for the running version (FW-DRIFT) and the board identity (FW-PSID)."""

from __future__ import annotations

from collections.abc import Sequence

from ..model.firmware import FirmwarePin
from ..model.index import Index
from ..parse.mlxfwmanager import FwDevice
from .findings import Finding


def _pins(index: Index) -> dict[str, FirmwarePin]:
    fw = index.inv.firmware
    return {p.model: p for p in fw.hcas} if fw is not None else {}


def check_firmware(index: Index, host: str, devices: Sequence[FwDevice]) -> list[Finding]:
    pins = _pins(index)
    if not pins:
        return []
    cat = index.cat
    hw = index.hardware[host]
    by_guid = {h.node_guid: h for h in hw.hcas if h.node_guid}
    by_type: dict[str, list[str]] = {}
    cards: list[tuple[str, str]] = [(h.name, h.model) for h in hw.hcas] + [(d.name, d.model) for d in hw.dpus]
    for name, card_model in cards:  # a BlueField DPU is pinned like an HCA (its catalog entry, kind dpu)
        model = cat.hcas.get(card_model)
        if model is not None and model.fw_device_type:
            by_type.setdefault(model.fw_device_type, []).append(name)
    out: list[Finding] = []
    for d in devices:
        hca = by_guid.get(d.base_guid) if d.base_guid else None
        if hca is not None:
            model_name, names = hca.model, [hca.name]
        else:
            names = by_type.get(d.device_type, [])
            model_name = next((m for m, info in cat.hcas.items() if info.fw_device_type == d.device_type), "")
            if not names:
                continue  # a card the inventory does not declare on this host (an Ethernet NIC): not ours to pin
        pin = pins.get(model_name)
        if pin is None:
            continue
        which = f"{host} {'/'.join(names)} ({model_name}, {d.pci or 'slot unknown'})"
        if d.fw_running != pin.version:
            pending = d.reset_pending and d.fw == pin.version
            out.append(Finding(
                "FW-DRIFT", "error", f"{host} {names[0]}" if len(names) == 1 else host,
                f"{which} runs firmware {d.fw_running}, pinned {pin.version}"
                + (f" (flashed {d.fw}: the card has not been reset)" if d.reset_pending else ""),
                expected=pin.version, observed=d.fw_running,
                action=(f"reset the card to run the flashed image: mlxfwreset -d {d.pci} reset (drain the node first), "
                        "or reboot it" if pending else
                        "bump it through a day-2 plan (`clusterforge diff` with the new pin): the node is drained, "
                        "flashed from the pin's image, reset and validated before it resumes"),
                inventory=("firmware", "hcas", [p.model for p in index.inv.firmware.hcas].index(model_name))
                if index.inv.firmware else (), host=host))
        elif d.fw != pin.version:  # runs the pin, but its flash holds another image: its next reset runs that
            out.append(Finding(
                "FW-DRIFT", "error", f"{host} {names[0]}" if len(names) == 1 else host,
                f"{which} runs its pin {pin.version} but its flash holds {d.fw}: its next reset (or reboot) runs "
                "that", expected=pin.version, observed=d.fw,
                action="flash the pin's image back before anything resets it (`clusterforge firmware flash ENV "
                       f"--limit {host} --model {model_name} --version {pin.version} --reflash`, the node drained), "
                       "or bump the pin through a plan",
                inventory=("firmware", "hcas", [p.model for p in index.inv.firmware.hcas].index(model_name))
                if index.inv.firmware else (), host=host))
        if pin.psids and d.psid not in pin.psids:
            out.append(Finding(
                "FW-PSID", "error", f"{host} {names[0]}" if len(names) == 1 else host,
                f"{which} is board {d.psid}, not one of the pinned PSIDs ({', '.join(pin.psids)}): another vendor's "
                "(OEM) board or another card model",
                expected=", ".join(pin.psids), observed=d.psid or "none",
                action="do not cross-flash another PSID's image; replace the card with a pinned board, or add its "
                       "PSID (with its own image) to the pin after qualifying it", host=host))
    return out
