"""Per-host GPU checks from nvidia-smi topo -m and nvlink --status."""

from __future__ import annotations

from ..model.hardware import Hardware
from ..model.index import Index
from ..model.place_text import device_floor
from ..parse.nvidia_smi_nvlink import NvlinkStatus
from ..parse.nvidia_smi_topo import NvidiaSmiTopo
from .findings import Finding

_NEAR = {"PIX", "PXB"}


def check_topo(index: Index, host: str, topo: NvidiaSmiTopo) -> list[Finding]:
    hw = index.hardware[host]
    floor = device_floor(index, host)
    out: list[Finding] = []
    want = hw.gpus.count if hw.gpus else 0
    if len(topo.gpus) != want:
        out.append(
            Finding(
                "GPU-COUNT",
                "error",
                host,
                f"{host} shows {len(topo.gpus)} GPUs, declared {want}",
                expected=str(want),
                observed=str(len(topo.gpus)),
                action="check `nvidia-smi -L` and dmesg for fallen-off-the-bus GPUs (Xid 79); reseat or RMA",
                floor=floor,
                host=host,
            )
        )
    if hw.gpus is not None and hw.gpus.nvlink_topology != "none":
        cls = index.cat.gpus.get(hw.gpus.model)
        expected_class = cls.nvlink_class if cls else None
        if expected_class:
            bad = []
            for i, g in enumerate(topo.gpus):
                for h in topo.gpus[i + 1 :]:
                    if hw.gpus.nvlink_topology == "bridged-pairs" and (int(g[3:]) // 2 != int(h[3:]) // 2):
                        continue
                    cell = topo.matrix.get(g, {}).get(h)
                    if cell != expected_class:
                        bad.append(f"{g}-{h}: {cell}")
            if bad:
                out.append(
                    Finding(
                        "GPU-NVLINK",
                        "error",
                        host,
                        f"{host}: {len(bad)} GPU pair(s) not at {expected_class}: {', '.join(bad[:4])}"
                        + (" ..." if len(bad) > 4 else ""),
                        expected=expected_class,
                        observed=", ".join(bad[:8]),
                        action="check nvidia-fabricmanager is running (NVSwitch systems) and `nvidia-smi nvlink "
                        "--status`; a GPU with missing links needs a reseat or RMA",
                        floor=floor,
                        host=host,
                    )
                )
    legend = {dev: nic for nic, dev in topo.nic_legend.items()}
    for hca in hw.hcas:
        if hca.gpu is None:
            continue
        nic = legend.get(hca.name)
        gpu = f"GPU{hca.gpu}"
        if nic is None or gpu not in topo.matrix:
            continue
        cell = topo.matrix[gpu].get(nic)
        if cell not in _NEAR:
            out.append(
                Finding(
                    "GPU-HCA-AFFINITY",
                    "error",
                    f"{host} {hca.name}",
                    f"{host} {hca.name} is {cell} from its paired {gpu}: GPUDirect RDMA will cross "
                    f"{'the CPU' if cell in ('PHB', 'NODE') else 'sockets'}",
                    expected="PIX or PXB",
                    observed=str(cell),
                    action="move the HCA to the PCIe switch of its GPU, or fix the pairing (gpu:) in the inventory",
                    floor=floor,
                    host=host,
                )
            )
    out += _dpus(host, hw, topo, floor)
    return out


_SAME_ROOT = {"PIX", "PXB", "PHB"}  # paths that stay below one host bridge


def _dpus(host: str, hw: Hardware, topo: NvidiaSmiTopo, floor: str) -> list[Finding]:
    """The design brief: keep the DPU and the GPUs off the same PCIe root complex."""
    legend = {dev: nic for nic, dev in topo.nic_legend.items()}
    out: list[Finding] = []
    for dpu in hw.dpus:
        nic = legend.get(dpu.name)
        if nic is None:
            continue
        near = [g for g in topo.gpus if topo.matrix.get(g, {}).get(nic) in _SAME_ROOT]
        if near:
            out.append(Finding(
                "GPU-DPU-ROOT-COMPLEX", "error", f"{host} {dpu.name}",
                f"{host} {dpu.name} ({dpu.model}) shares a PCIe root complex with {', '.join(near)}",
                expected="NODE or SYS to every GPU", observed=", ".join(f"{g}: {topo.matrix[g][nic]}" for g in near),
                action="move the DPU to a slot on another root complex; GPUDirect traffic and the DPU would "
                       "otherwise contend for one host bridge",
                floor=floor, host=host,
            ))
    return out


def check_nvlink(index: Index, host: str, status: NvlinkStatus) -> list[Finding]:
    hw = index.hardware[host]
    model = index.cat.gpus.get(hw.gpus.model) if hw.gpus else None
    expects = hw.gpus is not None and hw.gpus.nvlink_topology != "none" and model is not None and model.nvlink_links
    down = [f"GPU{g.index} link {ln.link}" for g in status.gpus for ln in g.links if not ln.active]
    if expects:
        down += [f"GPU{g.index} (all links: {g.message})" for g in status.gpus if g.status == "inactive"]
        if hw.gpus is not None and not status.gpus and hw.gpus.count:
            down.append("no NVLink reported at all")
    if not down:
        return []
    return [
        Finding(
            "GPU-NVLINK-DOWN", "error", host, f"{host}: {len(down)} NVLink link(s) inactive: {', '.join(down[:6])}",
            expected="all links active", observed=", ".join(down[:12]),
            action="check nvidia-fabricmanager and `nvidia-smi nvlink -e` error counters; reseat or RMA the GPU",
            floor=device_floor(index, host), host=host,
        )
    ]
