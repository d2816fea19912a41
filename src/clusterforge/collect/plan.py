"""What to run where: per-host tool commands (argv lists, never shell strings)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..catalog import catalog
from ..model.index import Index
from .tools import argv


def version_packages(family: str) -> dict[str, str]:
    """The packages whose installed version is collected on a host of `family`, each with the `software` pin it
    is checked against: NCCL's, the Lustre client's and Lemur's agent's first package under the family's names
    (catalog/os.yaml: `libnccl2` on Debian and Ubuntu, `libnccl` on EL)."""
    names = catalog().os.package_names
    return {names(family, "nccl")[0]: "nccl", names(family, "lustre_client")[0]: "lustre_client",
            names(family, "lemur")[0]: "lemur"}


def version_query(family: str) -> tuple[str, tuple[str, ...]]:
    """(stem, argv) of the installed-versions query on a host of `family`: its package manager's database."""
    stem = "rpm-query" if catalog().os.families[family].package_manager == "dnf" else "dpkg-query"
    return stem, argv(stem, *version_packages(family))


def family_of(index: Index, node: str) -> str:
    """The OS family of a node's declared release (default debian12)."""
    return index.cat.os.releases[index.hardware[node].os].family


MLXLINK = "mlxlink"
"""The stem prefix of a port's `mlxlink` output: `mlxlink@<hca>.<port>` (inventory collect.link_health)."""


def mlxlink_stem(hca: str, port: int) -> str:
    return f"{MLXLINK}@{hca}.{port}"


def mlxlink_port(stem: str) -> tuple[str, int] | None:
    """`mlxlink@mlx5_0.1` -> ("mlx5_0", 1); None for another stem."""
    if not stem.startswith(MLXLINK + "@"):
        return None
    hca, _, port = stem[len(MLXLINK) + 1:].rpartition(".")
    return (hca, int(port)) if hca and port.isascii() and port.isdigit() and len(port) <= 3 else None


def link_health_commands(index: Index, node: str) -> dict[str, tuple[str, ...]]:
    """`mlxlink -d <hca> -p <port> -m -c` for each cabled HCA port of `node` (the module and the counters)."""
    out: dict[str, tuple[str, ...]] = {}
    for hca in index.hardware[node].hcas:
        for p in hca.ports:
            if (node, hca.name, p.port) in index.cable_at:
                out[mlxlink_stem(hca.name, p.port)] = argv(MLXLINK, "-d", hca.name, "-p", str(p.port), "-m", "-c")
    return out


FABRIC_STEMS = ("ibnetdiscover", "iblinkinfo", "dump_fts")
"""What is read of the fabric, from one node (the master SM's): its links, its ports' states, and the forwarding
tables the SM programmed (validate: an uplink no route uses; accept --routes)."""


def fabric_tools() -> dict[str, tuple[str, ...]]:
    return {stem: argv(stem) for stem in FABRIC_STEMS}


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


def plane_ports(index: Index, node: str) -> dict[int, tuple[str, int]]:
    """Rail planes (`fabric.planes`): plane -> the (HCA, port) of `node` cabled into it, first in port
    order; {} without two planes or more. A plane is its own subnet: discovery runs once per plane."""
    spec = index.inv.fabric
    rpp = spec.rails_per_plane if spec is not None else None
    if rpp is None or node not in index.hardware:
        return {}
    out: dict[int, tuple[str, int]] = {}
    for hca in index.hardware[node].hcas:
        for p in hca.ports:
            cable = index.cable_at.get((node, hca.name, p.port))
            if cable is None:
                continue
            far = cable.b if cable.a.device == node else cable.a
            sw = index.switches.get(far.device)
            if sw is not None and sw.role == "leaf" and sw.rail is not None:
                out.setdefault(sw.rail // rpp, (hca.name, p.port))
    return dict(sorted(out.items())) if len(out) >= 2 else {}


def fabric_commands(index: Index, node: str) -> dict[str, tuple[str, ...]]:
    """The fabric tools on the SM node; with rail planes once per plane through its port there
    (`ibnetdiscover-plane<P>`: ibnetdiscover -C HCA -P PORT)."""
    planes = plane_ports(index, node)
    if not planes:
        return fabric_tools()
    return {f"{stem}-plane{plane}": argv(stem, "-C", hca, "-P", str(port))
            for plane, (hca, port) in planes.items() for stem in FABRIC_STEMS}


def default_targets(index: Index, addresses: dict[str, str]) -> tuple[list[Target], Target | None]:
    """Host targets for every node with an address, and the fabric target (the SM node)."""
    hosts = []
    for node in index.inv.nodes:
        addr = addresses.get(node.name)
        if addr is None:
            continue
        hw = index.hardware[node.name]
        cmds = {"ibstat": argv("ibstat")} if hw.hcas else {}
        if hw.hcas:
            cmds["ofed-info"] = argv("ofed-info")
            if index.inv.collect.link_health:
                cmds.update(link_health_commands(index, node.name))
        if (hw.hcas or hw.dpus) and index.inv.firmware is not None and index.inv.firmware.hcas:
            cmds["mlxfwmanager"] = argv("mlxfwmanager")  # HCAs' and DPUs' firmware
        stem, query = version_query(family_of(index, node.name))  # dpkg-query, or rpm -q on EL
        cmds[stem] = query
        if hw.gpus is not None and hw.gpus.count:
            for stem in ("nvidia-smi-topo", "nvidia-smi-nvlink", "nvidia-smi-query-gpu"):
                cmds[stem] = argv(stem)
        if index.inv.lustre and node.role == "compute":
            cmds["lctl-list-nids"] = argv("lctl-list-nids")
        if any(fs.client(node.name, node.role) for fs in index.inv.lustre):
            cmds["lfs-df"] = argv("lfs-df")  # the client's view of its file systems' targets
        if any(fs.pcc is not None and node.role in fs.pcc.roles and fs.client(node.name, node.role)
               for fs in index.inv.lustre):
            cmds["lctl-pcc"] = argv("lctl-pcc")  # the cache back-ends the client has attached
        if any(node.name in fs.servers and fs.targets for fs in index.inv.lustre):
            cmds["lctl-recovery"] = argv("lctl-recovery")  # the targets a server serves, and their recovery
        if any(node.name in fs.hsm_coordinators() for fs in index.inv.lustre):
            cmds["lctl-hsm"] = argv("lctl-hsm")  # the HSM coordinator on a metadata server
        hosts.append(Target(node.name, addr, cmds))
    sm = sm_node(index)
    fabric = Target(sm, addresses[sm], fabric_commands(index, sm)) if sm and sm in addresses else None
    return hosts, fabric
