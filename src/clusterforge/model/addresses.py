"""Address allocation from the plan: explicit addresses win, the rest come from pools.

Addresses are kept as integers (fast for 16k+ interfaces); `Addresses.text` formats one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from netaddr import IPAddress, IPNetwork

from ..errors import InventoryIssue
from .addressing import IpoibSubnet, Subnet
from .index import Index


@dataclass
class Addresses:
    mgmt: dict[str, int] = field(default_factory=dict)
    bmc: dict[str, int] = field(default_factory=dict)
    ipoib: dict[tuple[str, str], int] = field(default_factory=dict)  # (node, ifname)
    issues: list[InventoryIssue] = field(default_factory=list)

    def text(self, value: int) -> str:
        """An address as text: IPv6 beyond the 32-bit range (the plan's subnets may be either family)."""
        return str(IPAddress(value, 6 if value > 0xFFFFFFFF else 4))


def _pick(net: IPNetwork, sub: Subnet, index: int, guid: str | None) -> int | None:
    if sub.assign == "guid":
        if guid is None:
            return None
        host = int(guid, 16) & int(net.hostmask)
    else:
        host = sub.first + index
    if host <= 0 or host >= net.size - (1 if net.version == 4 else 0):
        return None
    return int(net.network) + host


def allocate(index: Index) -> Addresses:
    """Every node's management, BMC and IPoIB address. Pure; problems go to `.issues`."""
    inv = index.inv
    plan = inv.addressing
    out = Addresses()
    for attr, sub, table in (("mgmt_ip", plan.management, out.mgmt), ("bmc_ip", plan.bmc, out.bmc)):
        net = IPNetwork(str(sub.cidr)) if sub else None
        for i, node in enumerate(inv.nodes):
            explicit = getattr(node, attr)
            if explicit is not None:
                table[node.name] = int(explicit)
            elif net is not None and sub is not None:
                ip = _pick(net, sub, i, None)
                if ip is None:
                    section = "management" if attr == "mgmt_ip" else "bmc"
                    out.issues.append(
                        InventoryIssue(
                            ("nodes", i, attr),
                            f"no address left in addressing.{section} {net} for node #{i} "
                            f"(first={sub.first})",
                        )
                    )
                else:
                    table[node.name] = ip
    locks = {(ref.device, ref.hca): guid for ref, guid in inv.guid_locks.ports.items() if ref.port == 1}
    for j, ib in enumerate(plan.ipoib):
        _allocate_ipoib(index, j, ib, out, locks)
    return out


def _allocate_ipoib(
    index: Index, j: int, ib: IpoibSubnet, out: Addresses, locks: dict[tuple[str, str | None], str]
) -> None:
    net = IPNetwork(str(ib.cidr))
    for i, node in enumerate(index.inv.nodes):
        hca = next(
            (
                h
                for h in index.hardware[node.name].hcas
                if h.netdev == ib.name or (h.netdev is None and h.rail == ib.rail)
            ),
            None,
        )
        if hca is None:
            continue
        guid = locks.get((node.name, hca.name)) or hca.ports[0].guid
        ip = _pick(net, ib, i, guid)
        if ip is None:
            why = "its port GUID is not known yet" if ib.assign == "guid" else "the pool is exhausted"
            out.issues.append(
                InventoryIssue(
                    ("addressing", "ipoib", j),
                    f"cannot assign {ib.name} of {node.name} from {net}: {why}",
                )
            )
            continue
        out.ipoib[(node.name, ib.name)] = ip
