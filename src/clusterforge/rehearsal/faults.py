"""`clusterforge lab fault errors|hot|ecc`: inventory names -> the lab's monitoring faults.

The lab package knows no inventory; this module resolves an inventory cable id to the HCA ports at
its ends, and a host and GPU index to the node's declared GPUs, and checks the numbers, before
anything in the lab changes (`lab.monitoring_faults` applies them). A bad name or number is a
`FaultArgError` (the CLI exits 2 with its text).
"""

from __future__ import annotations

import math

from ..check.checked import Checked
from ..lab.monitoring_faults import MonitorFault, ecc_fault, errors_fault, hot_fault

DEFAULT_RATE_PER_H = 600.0
"""Symbol (and receive) errors an hour on each node end: 60 times the rules' default threshold (10/h)."""
DEFAULT_TEMP_C = 91.0
DEFAULT_ECC_PER_DAY = 5000.0
MAX_TEMP_C = 150.0


class FaultArgError(ValueError):
    """An unknown cable, host or GPU, or a number out of range: nothing was changed."""


def _positive(name: str, value: float, limit: float = 1e9) -> float:
    if not math.isfinite(value) or value <= 0 or value > limit:
        raise FaultArgError(f"{name} must be a number above 0 and at most {limit:g}, not {value:g}")
    return value


def cable_errors(checked: Checked, cable_id: str, rate_per_h: float = DEFAULT_RATE_PER_H) -> MonitorFault:
    """Errors rising on both node ends of `cable_id`. A switch end has no collector in the lab (nor on a node
    in production: switch counters come from the fabric's tools): it is named in the fault's notes."""
    rate = _positive("--rate", rate_per_h)
    cable = next((c for c in checked.inv.cables if c.id == cable_id), None)
    if cable is None:
        known = [c.id for c in checked.inv.cables]
        hint = f" (known: {known[0]} .. {known[-1]})" if known else ""
        raise FaultArgError(f"no cable {cable_id!r} in the inventory{hint}")
    ports: list[tuple[str, str, int]] = []
    notes: list[str] = []
    for end in (cable.a, cable.b):
        if end.hca is None:
            notes.append(f"{end}: a switch port, not simulated (no node collector reads switch counters; in "
                         "production they come from UFM or perfquery)")
        else:
            ports.append((end.device, end.hca, end.port))
    if not ports:
        raise FaultArgError(f"cable {cable_id} joins two switches ({cable.a}, {cable.b}): the lab's monitoring "
                            "reads node HCA ports only; pick a cable with a node end")
    return errors_fault(cable_id, ports, rate, notes)


def _gpu(checked: Checked, host: str, gpu: str) -> int:
    hw = checked.index.hardware.get(host)
    if hw is None:
        raise FaultArgError(f"no node {host!r} in the inventory")
    count = hw.gpus.count if hw.gpus is not None else 0
    if not count:
        raise FaultArgError(f"{host} has no GPUs in the inventory")
    if not gpu.isdigit() or int(gpu) >= count:
        raise FaultArgError(f"{host} has {count} GPU(s), indices 0-{count - 1}: no GPU {gpu!r}")
    return int(gpu)


def gpu_hot(checked: Checked, host: str, gpu: str, temp_c: float = DEFAULT_TEMP_C) -> MonitorFault:
    return hot_fault(host, _gpu(checked, host, gpu), _positive("--temp", temp_c, MAX_TEMP_C))


def gpu_ecc(checked: Checked, host: str, gpu: str, per_day: float = DEFAULT_ECC_PER_DAY) -> MonitorFault:
    return ecc_fault(host, _gpu(checked, host, gpu), _positive("--per-day", per_day))
