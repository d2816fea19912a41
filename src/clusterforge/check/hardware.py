"""Hardware against the catalog: known models, supported rates, GPU/HCA NUMA pairing."""

from __future__ import annotations

from ..catalog import Catalog
from ..model.hardware import Hardware
from ..model.index import Index
from ..util.errors import InventoryIssue
from ..util.errors import Path as ErrPath


def check(index: Index) -> list[InventoryIssue]:
    """Profiles in full; a node only for what it declares itself, so that a profile's problem is
    reported once, at the profile, not again under every node that overrides another field."""
    inv, cat = index.inv, index.cat
    out: list[InventoryIssue] = []
    for i, prof in enumerate(inv.profiles):
        out += _catalog(cat, prof, ("profiles", i))
        out += _pairing(prof, ("profiles", i), prof.name)
    for i, node in enumerate(inv.nodes):
        path = ("nodes", i)
        if node.gpus is not None or node.hcas is not None or node.dpus is not None:  # most nodes: none
            own = Hardware.model_construct(gpus=node.gpus, hcas=node.hcas or [], dpus=node.dpus or [])
            out += _catalog(cat, own, path)
        gpu_side = node.gpus is not None or node.hcas is not None
        dpu_side = node.dpus is not None or node.gpu_root_complexes is not None
        if gpu_side or dpu_side:
            out += _pairing(index.hardware[node.name], path, node.name, gpu_side, dpu_side)
    for i, sw in enumerate(inv.switches):
        model = cat.switches.get(sw.model)
        if model is None:
            out.append(
                InventoryIssue(
                    ("switches", i, "model"),
                    f"unknown switch model {sw.model!r} (catalog: {', '.join(sorted(cat.switches))})",
                    rule="INV-HW",
                )
            )
        elif sw.split and model.split is None:
            out.append(InventoryIssue(("switches", i, "split"), f"{sw.model} ports cannot be split", rule="INV-HW"))
    return out


def _catalog(cat: Catalog, hw: Hardware, path: ErrPath) -> list[InventoryIssue]:
    """Models known to the catalog, ports and rates they have."""
    out: list[InventoryIssue] = []
    gpus = hw.gpus
    if gpus is not None:
        if gpus.model not in cat.gpus:
            out.append(
                InventoryIssue(
                    (*path, "gpus", "model"),
                    f"unknown GPU model {gpus.model!r} (catalog: {', '.join(sorted(cat.gpus))})",
                    rule="INV-HW",
                )
            )
        if gpus.numa and len(gpus.numa) != gpus.count:
            out.append(
                InventoryIssue(
                    (*path, "gpus", "numa"),
                    f"lists {len(gpus.numa)} NUMA nodes for {gpus.count} GPUs",
                    rule="INV-PCIE",
                )
            )
    for j, hca in enumerate(hw.hcas):
        hpath = (*path, "hcas", j)
        model = cat.hcas.get(hca.model)
        if model is None or model.kind != "hca":
            known = ", ".join(k for k, v in sorted(cat.hcas.items()) if v.kind == "hca")
            out.append(InventoryIssue((*hpath, "model"), f"unknown HCA model {hca.model!r} ({known})", rule="INV-HW"))
        else:
            if len(hca.ports) > max(model.ports):
                out.append(
                    InventoryIssue(
                        (*hpath, "ports"),
                        f"{hca.model} has at most {max(model.ports)} ports, {len(hca.ports)} declared",
                        rule="INV-HW",
                    )
                )
            for k, port in enumerate(hca.ports):
                if port.port > max(model.ports):
                    out.append(
                        InventoryIssue((*hpath, "ports", k, "port"), f"{hca.model} has no port {port.port}",
                            rule="INV-HW")
                    )
                if port.rate not in model.rates:
                    out.append(
                        InventoryIssue(
                            (*hpath, "ports", k, "rate"),
                            f"{hca.model} does not run at {port.rate} (supports {', '.join(model.rates)})",
                            rule="INV-HW",
                        )
                    )
    return out


def _pairing(hw: Hardware, path: ErrPath, owner: str, gpu_side: bool = True,
             dpu_side: bool = True) -> list[InventoryIssue]:
    """HCA <-> GPU pairing and NUMA, DPU <-> GPU root complexes (the sides that are asked for)."""
    out: list[InventoryIssue] = []
    gpus = hw.gpus
    for j, hca in enumerate(hw.hcas if gpu_side else ()):
        hpath = (*path, "hcas", j)
        if hca.gpu is not None:
            if gpus is None or hca.gpu >= gpus.count:
                have = gpus.count if gpus else 0
                out.append(
                    InventoryIssue(
                        (*hpath, "gpu"),
                        f"{owner} {hca.name} is paired with GPU {hca.gpu}, but the node has {have} GPU(s)",
                        rule="INV-PCIE",
                    )
                )
            elif gpus.numa and hca.numa is not None and gpus.numa[hca.gpu] != hca.numa:
                out.append(
                    InventoryIssue(
                        (*hpath, "numa"),
                        f"{owner} {hca.name} is on NUMA node {hca.numa} but its GPU "
                        f"{hca.gpu} is on NUMA node {gpus.numa[hca.gpu]}: GPUDirect RDMA would cross "
                        f"the socket interconnect",
                        rule="INV-PCIE",
                    )
                )
    gpu_rcs = set(hw.gpu_root_complexes)
    for j, dpu in enumerate(hw.dpus if dpu_side else ()):
        if dpu.root_complex is not None and dpu.root_complex in gpu_rcs:
            out.append(
                InventoryIssue(
                    (*path, "dpus", j, "root_complex"),
                    f"{owner} {dpu.name} shares PCIe root complex "
                    f"{dpu.root_complex} with a GPU: keep the DPU and the GPUs on separate root complexes",
                    rule="INV-PCIE",
                )
            )
    return out
