"""What nvidia-smi would print for a node's declared GPUs: the lab's stand-in outputs.

There are no GPUs in the lab. Each lab container gets a clearly labelled stand-in
`nvidia-smi` that prints these texts, in the layout of real captures (tests/fixtures:
`nvidia-smi topo -m` of a DGX A100, `nvlink --status` of 8x A100 SXM4, `--query-gpu`
CSV), derived from the inventory, so collect -> parse -> validate runs end to end. The
parsers themselves are tested on real captures, never on this.
"""

from __future__ import annotations

import hashlib
import uuid

from ..catalog import Catalog
from ..model.hardware import Hardware

LEGEND = """
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""
CPUS_PER_NUMA = 64


def _numa(hw: Hardware, gpu: int) -> int:
    return hw.gpus.numa[gpu] if hw.gpus is not None and hw.gpus.numa else 0


def _gpu_gpu(hw: Hardware, cat: Catalog, i: int, j: int) -> str:
    assert hw.gpus is not None
    model = cat.gpus.get(hw.gpus.model)
    nv = model.nvlink_class if model else None
    topo = hw.gpus.nvlink_topology
    if nv and (topo == "nvswitch" or (topo == "bridged-pairs" and i // 2 == j // 2)):
        return nv
    return "NODE" if _numa(hw, i) == _numa(hw, j) else "SYS"


def _gpu_nic(hw: Hardware, gpu: int, nic: int) -> str:
    hca = hw.hcas[nic]
    if hca.gpu == gpu:
        return "PIX"
    if hca.numa is not None and hca.numa == _numa(hw, gpu):
        return "NODE"
    return "SYS"


def topo_m(hw: Hardware, cat: Catalog) -> str:
    count = hw.gpus.count if hw.gpus else 0
    gpus = [f"GPU{i}" for i in range(count)]
    nics = [f"NIC{i}" for i in range(len(hw.hcas))]
    head = "\t" + "\t".join(gpus + nics) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"
    rows = [head]
    for i in range(count):
        cells = ["X " if i == j else _gpu_gpu(hw, cat, i, j) for j in range(count)]
        cells += [_gpu_nic(hw, i, n) for n in range(len(hw.hcas))]
        numa = _numa(hw, i)
        cpus = f"{numa * CPUS_PER_NUMA}-{(numa + 1) * CPUS_PER_NUMA - 1}"
        rows.append(f"GPU{i}\t" + "\t".join(cells) + f"\t{cpus}\t{numa}\t\tN/A")
    for n, hca in enumerate(hw.hcas):
        cells = [_gpu_nic(hw, g, n) for g in range(count)]
        for m, other in enumerate(hw.hcas):
            if m == n:
                cells.append("X ")
            elif other.numa is not None and other.numa == hca.numa:
                cells.append("NODE")
            else:
                cells.append("SYS")
        rows.append(f"NIC{n}\t" + "\t".join(cells))
    legend = "\n".join(f"  NIC{n}: {hca.name}" for n, hca in enumerate(hw.hcas))
    return "\n".join(rows) + "\n" + LEGEND + ("\nNIC Legend:\n\n" + legend + "\n" if hw.hcas else "")


def _uuid(node: str, gpu: int) -> str:
    return "GPU-" + str(uuid.UUID(hashlib.sha256(f"{node}/{gpu}".encode()).hexdigest()[:32]))


def nvlink_status(node: str, hw: Hardware, cat: Catalog) -> str:
    if hw.gpus is None or not hw.gpus.count:
        return ""
    model = cat.gpus.get(hw.gpus.model)
    links = model.nvlink_links if model and hw.gpus.nvlink_topology != "none" else 0
    speed = f"{model.link_gbs:g}" if model else "0"
    name = model.smi_name if model else hw.gpus.model
    out = []
    for i in range(hw.gpus.count):
        out.append(f"GPU {i}: {name} (UUID: {_uuid(node, i)})")
        out += [f"         Link {k}: {speed} GB/s" for k in range(links)]
    return "\n".join(out) + "\n"


def query_gpu(node: str, hw: Hardware, cat: Catalog, fields: list[str], driver: str | None) -> str:
    """CSV for `--query-gpu=<fields> --format=csv` (fields: index, name, pci.bus_id, driver_version)."""
    if hw.gpus is None or not hw.gpus.count:
        return ""
    model = cat.gpus.get(hw.gpus.model)
    values = {
        "name": model.smi_name if model else hw.gpus.model,
        "driver_version": driver or "[N/A]",
    }
    rows = [", ".join(fields)]
    for i in range(hw.gpus.count):
        row = {"index": str(i), "pci.bus_id": f"00000000:{0x18 + 0x10 * i:02X}:00.0", "uuid": _uuid(node, i),
               **values}
        rows.append(", ".join(row.get(f, "[N/A]") for f in fields))
    return "\n".join(rows) + "\n"
