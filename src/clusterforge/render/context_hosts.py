"""Per-host files (NCCL, IPoIB) and the environment's /etc/hosts fragment.

Conventions: NCCL's bootstrap socket runs on the management interface, the node's `mgmt_netdev`
(hardware, default `eth0`);
IPoIB interfaces are named as in `addressing.ipoib` (`ib0`, `ib1`) and configured
with netplan (`infiniband-mode`, netplan >= 0.105); a node's IPoIB host name is
`<node>-<ifname>`.
"""

from __future__ import annotations

from typing import Any

from .context_opensm import DEFAULT_PKEY
from .fabric import FabricView
from .spec import FileSpec, host_file

NETPLAN_FILE = "etc/netplan/60-clusterforge-ipoib.yaml"


def nccl_conf(fab: FabricView, node: str) -> dict[str, Any] | None:
    """NCCL_IB_HCA in rail order (`=` prefix: exact device names), or None without GPUs/HCAs."""
    hw = fab.index.hardware[node]
    if hw.gpus is None or hw.gpus.count == 0:
        return None
    hcas = [ca for ca in fab.rail_ordered[node] if ca.kind == "hca"]
    ports = [f"{ca.name}:{p}" for ca in hcas for p in ca.ports]
    if not ports:
        return None
    out = {"node": node, "ib_hca": "=" + ",".join(ports), "socket_ifname": hw.mgmt_netdev,
           "rails": [{"rail": "-" if ca.rail is None else str(ca.rail), "hca": ca.name,
                      "gpu": "-" if ca.gpu is None else str(ca.gpu)} for ca in hcas]}
    spec = fab.index.inv.fabric
    rpp = spec.rails_per_plane if spec is not None else None
    if spec is not None and rpp is not None and len(ports) > rpp:
        # rail planes: no path between rails of different planes in the fabric; NCCL keeps each ring/tree
        # on one rail (no cross-NIC) and moves cross-rail data over NVLink to the GPU of the right rail (PXN)
        out["rail_planes"] = "rail" if spec.planes == "rail" else f"{spec.planes} rails per plane"
    return out


def ipoib_interfaces(fab: FabricView, node: str) -> tuple[list[dict[str, Any]], list[str]]:
    ipoib = fab.index.addresses.ipoib
    out: list[dict[str, Any]] = []
    notes: list[str] = []
    for ib, prefix in fab.ipoib_nets:
        ip = ipoib.get((node, ib.name))
        if ip is None:
            continue
        if ib.pkey != DEFAULT_PKEY:
            notes.append(f"{node} {ib.name}: P_Key 0x{ib.pkey:04x} child interfaces are not rendered")
            continue
        out.append({"name": ib.name, "address": f"{fab.ip(ip)}/{prefix}", "mtu": ib.mtu,
                    "mode": ib.mode})
    return out, notes


def hosts_entries(fab: FabricView) -> dict[str, Any]:
    """Management names, `<node>-<ifname>` IPoIB names, switch management and extra hosts."""
    inv = fab.index.inv
    addrs = fab.index.addresses
    domain = inv.addressing.dns_domain
    ip = fab.ip

    def names(short: str) -> str:
        return f"{short}.{domain} {short}" if domain else short

    mgmt = [{"ip": ip(addrs.mgmt[n.name]), "names": names(n.name)}
            for n in inv.nodes if n.name in addrs.mgmt]
    ipoib = [{"ip": ip(addrs.ipoib[(n.name, ib.name)]), "names": names(f"{n.name}-{ib.name}")}
             for n in inv.nodes for ib in inv.addressing.ipoib if (n.name, ib.name) in addrs.ipoib]
    switches = [{"ip": str(s.mgmt_ip), "names": names(s.name)} for s in inv.switches if s.mgmt_ip]
    extra = [{"ip": str(addr), "names": names(name)} for name, addr in sorted(inv.addressing.extra_hosts.items())]
    sections = [
        {"title": _mgmt_title(fab), "entries": mgmt},
        {"title": "IPoIB", "entries": ipoib},
        {"title": "switch management", "entries": switches},
        {"title": "extra hosts", "entries": extra},
    ]
    return {"sections": [s for s in sections if s["entries"]]}


def host_files(fab: FabricView) -> list[FileSpec]:
    out: list[FileSpec] = [FileSpec("network/hosts", "hosts/hosts.j2", hosts_entries(fab))]
    for node in fab.index.inv.nodes:
        nccl = nccl_conf(fab, node.name)
        if nccl is not None:
            out.append(host_file(node.name, "/etc/nccl.conf", "nccl/nccl.conf.j2", nccl))
        ifaces, notes = ipoib_interfaces(fab, node.name)
        if ifaces:
            out.append(host_file(node.name, f"/{NETPLAN_FILE}", "ipoib/netplan.yaml.j2",
                                 {"node": node.name, "interfaces": ifaces}, notes=tuple(notes)))
    return out


def _mgmt_title(fab: FabricView) -> str:
    """`management (eth0)` when every node with a management address uses the same interface."""
    hardware, mgmt = fab.index.hardware, fab.index.addresses.mgmt
    ifnames = {hardware[n.name].mgmt_netdev for n in fab.index.inv.nodes if n.name in mgmt}
    return f"management ({ifnames.pop()})" if len(ifnames) == 1 else "management"
