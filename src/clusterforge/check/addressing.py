"""Addresses inside their subnets, no address twice, no overlapping subnets."""

from __future__ import annotations

from netaddr import IPAddress, IPNetwork

from ..errors import InventoryIssue
from ..errors import Path as ErrPath
from ..model.addresses import Addresses
from ..model.addressing import Subnet
from ..model.index import Index


def check(index: Index) -> list[InventoryIssue]:
    inv = index.inv
    plan = inv.addressing
    addrs = index.addresses
    out = list(addrs.issues)
    subnets: list[tuple[str, Subnet, ErrPath]] = []
    if plan.management:
        subnets.append(("management", plan.management, ("addressing", "management")))
    if plan.bmc:
        subnets.append(("bmc", plan.bmc, ("addressing", "bmc")))
    subnets += [(f"ipoib {ib.name}", ib, ("addressing", "ipoib", j)) for j, ib in enumerate(plan.ipoib)]
    nets = [(name, IPNetwork(str(sub.cidr)), sub, path) for name, sub, path in subnets]
    for a in range(len(nets)):
        for b in range(a + 1, len(nets)):
            (na, neta, _, _), (nb, netb, _, pathb) = nets[a], nets[b]
            if neta.first <= netb.last and netb.first <= neta.last:
                out.append(
                    InventoryIssue((*pathb, "cidr"), f"{nb} subnet {netb} overlaps {na} subnet {neta}")
                )
    for _name, net, sub, path in nets:
        if sub.gateway is not None and IPAddress(str(sub.gateway)) not in net:
            out.append(InventoryIssue((*path, "gateway"), f"gateway {sub.gateway} is outside {net}"))
    names = [ib.name for ib in plan.ipoib]
    for j, ib in enumerate(plan.ipoib):
        if names.index(ib.name) != j:
            out.append(InventoryIssue(("addressing", "ipoib", j, "name"), f"duplicate interface {ib.name}"))
    out += _inside(index, addrs.mgmt, plan.management, "mgmt_ip", "management")
    out += _inside(index, addrs.bmc, plan.bmc, "bmc_ip", "bmc")
    out += _unique(index, addrs)
    return out


def _inside(
    index: Index, table: dict[str, int], sub: Subnet | None, attr: str, section: str
) -> list[InventoryIssue]:
    if sub is None:
        return []
    net = IPNetwork(str(sub.cidr))
    out: list[InventoryIssue] = []
    for i, node in enumerate(index.inv.nodes):
        ip = table.get(node.name)
        if ip is not None and getattr(node, attr) is not None and not net.first <= ip <= net.last:
            out.append(
                InventoryIssue(("nodes", i, attr), f"{IPAddress(ip)} is outside the {section} subnet {net}")
            )
    return out


def _unique(index: Index, addrs: Addresses) -> list[InventoryIssue]:
    inv = index.inv
    seen: dict[int, str] = {}
    out: list[InventoryIssue] = []
    pos = {n.name: i for i, n in enumerate(inv.nodes)}

    def claim(ip: int, owner: str, path: ErrPath) -> None:
        other = seen.setdefault(ip, owner)
        if other != owner:
            out.append(
                InventoryIssue(path, f"address {addrs.text(ip)} of {owner} is also assigned to {other}")
            )

    for attr, table in (("mgmt_ip", addrs.mgmt), ("bmc_ip", addrs.bmc)):
        for name, ip in table.items():
            claim(ip, f"{name} {attr}", ("nodes", pos[name], attr))
    for (name, ifname), ip in addrs.ipoib.items():
        claim(ip, f"{name} {ifname}", ("nodes", pos[name]))
    for i, sw in enumerate(inv.switches):
        if sw.mgmt_ip is not None:
            claim(int(sw.mgmt_ip), f"{sw.name} mgmt_ip", ("switches", i, "mgmt_ip"))
    for host, extra in inv.addressing.extra_hosts.items():
        claim(int(extra), host, ("addressing", "extra_hosts", host))
    return out
