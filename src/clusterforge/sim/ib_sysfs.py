"""A stand-in /sys/class/infiniband tree for node_exporter's `--path.sysfs`: the lab's HCA counters.

There are no HCAs in the lab's containers. node_exporter (the real Debian program) reads this
tree as it would a node's sysfs, so the monitoring path from the counters to an alert runs
for real; a lab fault (`symbol errors rising on a cable`) is a counter written here. The
files are those the kernel's ib_core exposes and node_exporter 1.5 reads: per device
`board_id`, `fw_ver`, `hca_type`; per port `state`, `phys_state`, `rate`, `link_layer` and
`counters/<name>`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..util.fsutil import write_atomic

COUNTERS = (
    "symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors", "port_rcv_remote_physical_errors",
    "local_link_integrity_errors", "excessive_buffer_overrun_errors", "port_xmit_discards", "port_xmit_wait",
    "VL15_dropped", "port_rcv_data", "port_xmit_data", "port_rcv_packets", "port_xmit_packets",
    "port_rcv_constraint_errors", "port_xmit_constraint_errors",
)
PHYS_STATES = {2: "Polling", 3: "Disabled", 5: "LinkUp"}
RATES = {"HDR": "200 Gb/sec (4X HDR)", "HDR100": "100 Gb/sec (2X HDR)", "EDR": "100 Gb/sec (4X EDR)",
         "NDR": "400 Gb/sec (4X NDR)", "NDR200": "200 Gb/sec (2X NDR)", "XDR": "800 Gb/sec (4X XDR)"}


@dataclass
class SysfsPort:
    device: str
    port: int
    rate: str = "HDR"
    phys_state: int = 5
    counters: dict[str, int] = field(default_factory=dict)


def write_tree(root: Path, ports: Iterable[SysfsPort], counters: Mapping[str, int] | None = None) -> None:
    """Write (or update) `root/class/infiniband/...` for `ports`; unnamed counters are 0."""
    base = root / "class" / "infiniband"
    for p in ports:
        dev = base / p.device
        dev.mkdir(parents=True, exist_ok=True)
        for name, text in (("board_id", "CF_LAB_STANDIN"), ("fw_ver", "0.0.0"), ("hca_type", "lab-standin")):
            if not (dev / name).exists():
                write_atomic(dev / name, text + "\n")
        port = dev / "ports" / str(p.port)
        (port / "counters").mkdir(parents=True, exist_ok=True)
        state = "4: ACTIVE" if p.phys_state == 5 else "1: DOWN"
        write_atomic(port / "state", state + "\n")
        write_atomic(port / "phys_state", f"{p.phys_state}: {PHYS_STATES.get(p.phys_state, 'Polling')}\n")
        write_atomic(port / "rate", RATES.get(p.rate, RATES["HDR"]) + "\n")
        write_atomic(port / "link_layer", "InfiniBand\n")
        values = {**{c: 0 for c in COUNTERS}, **(counters or {}), **p.counters}
        for name, value in values.items():
            write_atomic(port / "counters" / name, f"{value}\n")
