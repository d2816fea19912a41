"""Addresses inside their subnets, no address twice, no overlapping subnets; frozen ones too."""

from __future__ import annotations

from netaddr import IPAddress, IPNetwork

from ..model.addresses import Addresses, is_named_nid
from ..model.addressing import Subnet
from ..model.index import Index
from ..util.errors import InventoryIssue
from ..util.errors import Path as ErrPath


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
                    InventoryIssue((*pathb, "cidr"), f"{nb} subnet {netb} overlaps {na} subnet {neta}", rule="INV-ADDR")
                )
    for _name, net, sub, path in nets:
        if sub.gateway is not None and IPAddress(str(sub.gateway)) not in net:
            out.append(InventoryIssue((*path, "gateway"), f"gateway {sub.gateway} is outside {net}", rule="INV-ADDR"))
    names = [ib.name for ib in plan.ipoib]
    for j, ib in enumerate(plan.ipoib):
        if names.index(ib.name) != j:
            out.append(InventoryIssue(("addressing", "ipoib", j, "name"), f"duplicate interface {ib.name}",
                rule="INV-DUP"))
    out += _inside(index, addrs.mgmt, plan.management, "mgmt_ip", "management")
    out += _inside(index, addrs.bmc, plan.bmc, "bmc_ip", "bmc")
    out += _frozen_inside(index, addrs)
    out += _unique(index, addrs)
    out += _named_mgs(index, addrs)
    return out


def _named_mgs(index: Index, addrs: Addresses) -> list[InventoryIssue]:
    """An MGS NID that names its server (`lus01@o2ib0`): a server of that file system, with an
    address on the file system's first interface, on an o2ib network."""
    out: list[InventoryIssue] = []
    for i, fs in enumerate(index.inv.lustre):
        for j, nid in enumerate(fs.mgs_nids):
            if not is_named_nid(nid):
                continue
            name, _, net = nid.partition("@")
            path: ErrPath = ("lustre", i, "mgs_nids", j)
            ifname = fs.interfaces[0] if fs.interfaces else None
            if not net.startswith("o2ib") or ifname is None:
                why = "an o2ib NID" if ifname is not None else "an interface in `interfaces`"
                out.append(InventoryIssue(path, f"MGS NID {nid} names a server, which needs {why} (it resolves to "
                                                f"the server's IPoIB address): write the address instead",
                                                    rule="INV-LNET"))
            elif name not in fs.servers:
                what = "a declared node" if name not in index.nodes else f"a server of {fs.name}"
                out.append(InventoryIssue(path, f"MGS NID {nid} names {name}, which is not {what} "
                                                f"(servers: {', '.join(fs.servers) or 'none'})", rule="INV-LNET"))
            elif name in index.nodes and (name, ifname) not in addrs.ipoib:
                out.append(InventoryIssue(path, f"MGS NID {nid}: {name} has no {ifname} address to resolve to",
                    rule="INV-LNET"))
    return out


def frozen_path(node: str, pool: str) -> ErrPath:
    """Where a frozen address sits in addresses.generated.yaml."""
    if pool in ("mgmt", "bmc"):
        return ("allocations", "nodes", node, pool)
    return ("allocations", "nodes", node, "ipoib", pool)


def _frozen_inside(index: Index, addrs: Addresses) -> list[InventoryIssue]:
    """A frozen address outside its pool's subnet: the subnet was changed after the freeze."""
    plan = index.inv.addressing
    subnets: dict[str, tuple[str, Subnet]] = {}
    for pool, sub, label in (("mgmt", plan.management, "management"), ("bmc", plan.bmc, "bmc")):
        if sub is not None:
            subnets[pool] = (label, sub)
    for ib in plan.ipoib:
        subnets.setdefault(ib.name, (f"ipoib {ib.name}", ib))
    out: list[InventoryIssue] = []
    for node, pool in sorted(addrs.outside):
        label, sub = subnets[pool]
        ip = addrs.get(node, pool)
        out.append(InventoryIssue(
            frozen_path(node, pool),
            f"{addrs.text(ip or 0)}, frozen for {node}, is outside the {label} subnet {sub.cidr}: after a subnet "
            f"change, `clusterforge plan ENV --write --renumber` reallocates every node (and shows what moves)",
            rule="INV-ADDR",
        ))
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
                InventoryIssue(("nodes", i, attr), f"{IPAddress(ip)} is outside the {section} subnet {net}",
                    rule="INV-ADDR")
            )
    return out


def _unique(index: Index, addrs: Addresses) -> list[InventoryIssue]:
    """No address twice. Frozen addresses claim first, so a clash with a new or explicit one is
    reported where the newcomer is declared."""
    inv = index.inv
    every = [*addrs.mgmt.values(), *addrs.bmc.values(), *addrs.ipoib.values(),
             *(int(sw.mgmt_ip) for sw in inv.switches if sw.mgmt_ip is not None),
             *(int(x) for x in inv.addressing.extra_hosts.values())]
    if len(set(every)) == len(every):
        return []  # the common case, in one pass; the claims below only word what clashes
    seen: dict[int, tuple[str, bool]] = {}
    out: list[InventoryIssue] = []
    pos = {n.name: i for i, n in enumerate(inv.nodes)}
    frozen = addrs.frozen
    claims: list[tuple[int, str, ErrPath, bool]] = []

    nodes: list[tuple[str, str, str, ErrPath, int]] = [  # node, pool, owner in words, where declared, address
        (name, pool, f"{name} {attr}", ("nodes", pos[name], attr), ip)
        for attr, pool, table in (("mgmt_ip", "mgmt", addrs.mgmt), ("bmc_ip", "bmc", addrs.bmc))
        for name, ip in table.items()
    ]
    nodes += [(name, ifname, f"{name} {ifname}", ("nodes", pos[name]), ip)
              for (name, ifname), ip in addrs.ipoib.items()]
    for name, pool, owner, declared, ip in nodes:
        kept = (name, pool) in frozen
        claims.append((ip, owner, frozen_path(name, pool) if kept else declared, kept))
    for i, sw in enumerate(inv.switches):
        if sw.mgmt_ip is not None:
            claims.append((int(sw.mgmt_ip), f"{sw.name} mgmt_ip", ("switches", i, "mgmt_ip"), False))
    for host, extra in inv.addressing.extra_hosts.items():
        claims.append((int(extra), host, ("addressing", "extra_hosts", host), False))
    claims.sort(key=lambda c: not c[3])  # frozen first, the rest in their order (the sort is stable)
    for ip, owner, path, is_frozen in claims:
        other, other_frozen = seen.setdefault(ip, (owner, is_frozen))
        if other == owner:
            continue
        if other_frozen and not is_frozen:
            holder = other.split()[0]
            message = (f"address {addrs.text(ip)} of {owner} is already allocated to {other} (frozen in "
                       f"addresses.generated.yaml): choose a free address, or delete {holder}'s entry there "
                       f"to give {holder} a new one at the next `plan --write`")
        else:
            message = f"address {addrs.text(ip)} of {owner} is also assigned to {other}"
            if other_frozen and is_frozen:
                message += (" (both frozen in addresses.generated.yaml: delete one entry to give that node a new "
                            "address at the next `plan --write`)")
        out.append(InventoryIssue(path, message, rule="INV-ADDR"))
    return out
