"""What to run where: per-host tool commands (argv lists, never shell strings)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.index import Index

# packages whose installed versions are checked against the inventory's software pins
VERSION_PACKAGES = {"libnccl2": "nccl", "lustre-client-utils": "lustre_client"}
"""Packages whose installed version is collected, and the `software` pin each is checked against."""

HOST_TOOLS: dict[str, tuple[str, ...]] = {
    "ibstat": ("ibstat",),
    "nvidia-smi-topo": ("nvidia-smi", "topo", "-m"),
    "nvidia-smi-nvlink": ("nvidia-smi", "nvlink", "--status"),
    "nvidia-smi-query-gpu": (
        "nvidia-smi",
        "--query-gpu=index,name,pci.bus_id,driver_version",
        "--format=csv",
    ),
    "lctl-list-nids": ("lctl", "list_nids"),
    "ofed-info": ("ofed_info", "-s"),
    "dpkg-query": ("dpkg-query", "-W", "-f=${Package} ${Version}\n", *VERSION_PACKAGES),
}
FABRIC_TOOLS: dict[str, tuple[str, ...]] = {
    "ibnetdiscover": ("ibnetdiscover",),
    "iblinkinfo": ("iblinkinfo",),
}


@dataclass(frozen=True)
class Target:
    host: str
    address: str
    commands: dict[str, tuple[str, ...]] = field(default_factory=dict)  # file stem -> argv


def sm_node(index: Index) -> str | None:
    """The master subnet manager: highest priority (ties are an inventory error)."""
    sm = index.inv.opensm
    if sm is None or not sm.sm_nodes:
        return None
    return max(sm.sm_nodes, key=lambda s: s.priority).node


def default_targets(index: Index, addresses: dict[str, str]) -> tuple[list[Target], Target | None]:
    """Host targets for every node with an address, and the fabric target (the SM node)."""
    hosts = []
    for node in index.inv.nodes:
        addr = addresses.get(node.name)
        if addr is None:
            continue
        hw = index.hardware[node.name]
        cmds = {"ibstat": HOST_TOOLS["ibstat"]} if hw.hcas else {}
        if hw.hcas:
            cmds["ofed-info"] = HOST_TOOLS["ofed-info"]
        cmds["dpkg-query"] = HOST_TOOLS["dpkg-query"]
        if hw.gpus is not None and hw.gpus.count:
            for stem in ("nvidia-smi-topo", "nvidia-smi-nvlink", "nvidia-smi-query-gpu"):
                cmds[stem] = HOST_TOOLS[stem]
        if index.inv.lustre and node.role == "compute":
            cmds["lctl-list-nids"] = HOST_TOOLS["lctl-list-nids"]
        hosts.append(Target(node.name, addr, cmds))
    sm = sm_node(index)
    fabric = Target(sm, addresses[sm], dict(FABRIC_TOOLS)) if sm and sm in addresses else None
    return hosts, fabric
