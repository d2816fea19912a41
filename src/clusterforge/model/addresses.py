"""Address allocation: explicit addresses win, frozen ones are kept, new nodes take free ones.

The rules, per pool (management, BMC, each `assign: index` IPoIB subnet):

1. An explicit `mgmt_ip` / `bmc_ip` wins.
2. A node with an address frozen in `allocations.nodes` (addresses.generated.yaml) keeps it.
3. New nodes (nothing frozen for them in the pool), in node-name order, take: their own
   released address when they come back under the same name; else the lowest never-used
   address from `first` on (not frozen, not explicit, not a gateway, switch or extra host);
   only when there is none left, the lowest released one.
4. The addresses of nodes that leave in this change (frozen for a node no longer declared, or
   no longer on that interface, or replaced by an explicit address) are held back: no other
   node gets them in the same run. The next write moves them to `allocations.released`.
5. A pool with nothing frozen or released at all (a fresh inventory, or `plan --write
   --renumber`) is allocated as before freezing existed: `first` + the node's position in
   the node list. List order therefore decides only the first allocation, never a later one.

`assign: guid` subnets stay derived from the port GUID. Addresses are kept as integers (fast
for 16k+ interfaces); `Addresses.text` formats one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from netaddr import IPAddress, IPNetwork

from ..util.errors import InventoryIssue
from .addressing import IpoibSubnet, Subnet
from .allocations import Allocations, address_value
from .hardware import Hardware, Hca
from .inventory import Inventory

_LITERAL = re.compile(r"^[0-9.]+$")


class Resolved(Protocol):
    """What allocation reads of the Index (model/index.py, which calls `allocate` for its `addresses`): the
    inventory and each node's effective hardware. A protocol, so this module needs nothing of index.py."""

    @property
    def inv(self) -> Inventory: ...

    @property
    def hardware(self) -> Mapping[str, Hardware]: ...


@dataclass
class Addresses:
    mgmt: dict[str, int] = field(default_factory=dict)
    bmc: dict[str, int] = field(default_factory=dict)
    ipoib: dict[tuple[str, str], int] = field(default_factory=dict)  # (node, ifname)
    issues: list[InventoryIssue] = field(default_factory=list)
    frozen: set[tuple[str, str]] = field(default_factory=set)
    """(node, pool) whose address was kept from `allocations.nodes`; pool: mgmt, bmc or an ifname."""
    released: dict[str, dict[int, str]] = field(default_factory=dict)
    """pool -> address -> node that last had it: what the next write keeps in `allocations.released`."""
    pools: list[str] = field(default_factory=list)
    """The frozen pools, in file order: mgmt, bmc, then the `assign: index` IPoIB interfaces."""
    nids: list[tuple[str, ...]] = field(default_factory=list)
    """MGS NIDs of each `inv.lustre[i]`, server names resolved to their IPoIB address."""
    outside: list[tuple[str, str]] = field(default_factory=list)
    """(node, pool) kept from `allocations.nodes` although outside the pool's subnet (a check error)."""

    def text(self, value: int) -> str:
        """An address as text: IPv6 beyond the 32-bit range (the plan's subnets may be either family)."""
        return str(IPAddress(value, 6 if value > 0xFFFFFFFF else 4))

    def get(self, node: str, pool: str) -> int | None:
        """The address of `node` in `pool` (mgmt, bmc or an IPoIB interface), if it has one."""
        if pool == "mgmt":
            return self.mgmt.get(node)
        if pool == "bmc":
            return self.bmc.get(node)
        return self.ipoib.get((node, pool))


@dataclass(frozen=True, slots=True)
class _Hosts:
    """A subnet's host addresses as plain integers (netaddr's properties cost ~15 us a call)."""

    base: int
    end: int  # host offsets run from 1 to end - 1 (IPv4: the broadcast address excluded)

    @classmethod
    def of(cls, net: IPNetwork) -> _Hosts:
        return cls(int(net.first), net.size - (1 if net.version == 4 else 0))

    def at(self, host: int) -> int | None:
        return self.base + host if 0 < host < self.end else None


def _reserved(index: Resolved) -> set[int]:
    """Addresses no node may be given: gateways, switches' management addresses, extra hosts."""
    plan = index.inv.addressing
    subs = [s for s in (plan.management, plan.bmc, *plan.ipoib) if s is not None]
    out = {int(s.gateway) for s in subs if s.gateway is not None}
    out |= {int(sw.mgmt_ip) for sw in index.inv.switches if sw.mgmt_ip is not None}
    out |= {int(ip) for ip in plan.extra_hosts.values()}
    return out


@dataclass
class _Pool:
    """One pool's inputs: who is in it, what is explicit, frozen and released, how to word a shortage."""

    name: str
    net: IPNetwork
    sub: Subnet
    members: list[tuple[int, str]]  # (position in the node list, node name)
    explicit: dict[str, int]
    frozen: dict[str, int]
    released: dict[int, str]
    shortage: tuple[tuple[str | int, ...], str, str]  # issue path (-1: the node's position), pool in words, field


def allocate(index: Resolved, *, renumber: bool = False) -> Addresses:
    """Every node's management, BMC and IPoIB address. Pure; problems go to `.issues`.

    `renumber`: ignore what is frozen and allocate every pool by the first-allocation rule.
    """
    inv = index.inv
    plan = inv.addressing
    frozen = Allocations() if renumber else inv.allocations
    out = Addresses()
    reserved = _reserved(index)
    everyone = list(enumerate(n.name for n in inv.nodes))
    for attr, pool, sub, table in (("mgmt_ip", "mgmt", plan.management, out.mgmt),
                                   ("bmc_ip", "bmc", plan.bmc, out.bmc)):
        explicit = {n.name: int(ip) for n in inv.nodes if (ip := getattr(n, attr)) is not None}
        if sub is None:
            table.update(explicit)
            continue
        section = "management" if pool == "mgmt" else "bmc"
        kept = {name: address_value(x) for name, a in frozen.nodes.items() if (x := getattr(a, pool)) is not None}
        released = {address_value(ip): who for ip, who in getattr(frozen.released, pool).items()}
        net = IPNetwork(str(sub.cidr))
        spec = _Pool(pool, net, sub, everyone, explicit, kept, released,
                     (("nodes", -1, attr), f"addressing.{section} {net}", attr))
        for name, ip in _fill(spec, reserved, out).items():
            table[name] = ip
    locks = {(ref.device, ref.hca): guid for ref, guid in inv.guid_locks.ports.items() if ref.port == 1}
    hcas: dict[int, dict[str | int, tuple[int, Hca]]] = {}  # by id(Hardware): nodes share their profile's
    for j, ib in enumerate(plan.ipoib):
        _allocate_ipoib(index, j, ib, out, locks, frozen, reserved, hcas)
    out.nids = [_resolve_nids(fs.mgs_nids, fs.interfaces, out) for fs in inv.lustre]
    return out


def _fill(p: _Pool, reserved: set[int], out: Addresses) -> dict[str, int]:
    """One pool's addresses by the rules in the module docstring."""
    out.pools.append(p.name)
    got: dict[str, int] = {}
    hosts = _Hosts.of(p.net)
    if not p.frozen and not p.released:  # the pool's first allocation: list order, as before freezing
        for i, name in p.members:
            ip = p.explicit.get(name)
            if ip is None:
                ip = hosts.at(p.sub.first + i)
            if ip is None:
                _short(p, i, name, out, None)
                continue
            got[name] = ip
        return got
    names = {name for _, name in p.members}
    held: dict[int, str] = {ip: who for who, ip in p.frozen.items() if who not in names}
    new: list[tuple[str, int]] = []
    first, last = int(p.net.first), int(p.net.last)
    for i, name in p.members:
        ip = p.explicit.get(name)
        before = p.frozen.get(name)
        if ip is not None:
            got[name] = ip
            if before is not None and before != ip:
                held.setdefault(before, name)
        elif before is not None:
            got[name] = before
            out.frozen.add((name, p.name))
            if not first <= before <= last:
                out.outside.append((name, p.name))
        else:
            new.append((name, i))
    used = set(got.values()) | reserved
    own: dict[str, int] = {}
    for ip, who in sorted(p.released.items()):
        own.setdefault(who, ip)
    cursor = p.sub.first
    for name, i in sorted(new):
        ip = own.get(name)
        if ip is None or ip in used or ip in held or not first <= ip <= last:
            ip = None
            while True:
                candidate = hosts.at(cursor)
                if candidate is None:
                    break
                cursor += 1
                if candidate not in used and candidate not in held and candidate not in p.released:
                    ip = candidate
                    break
        if ip is None:
            ip = next((r for r in sorted(p.released) if r not in used and r not in held
                       and hosts.at(r - first) is not None), None)
        if ip is None:
            _short(p, i, name, out, held)
            continue
        got[name] = ip
        used.add(ip)
    keep = {ip: who for ip, who in p.released.items() if ip not in used and first <= ip <= last}
    keep.update((ip, who) for ip, who in held.items() if ip not in used and first <= ip <= last)
    if keep:
        out.released[p.name] = dict(sorted(keep.items()))
    return got


def _short(p: _Pool, i: int, name: str, out: Addresses, held: dict[int, str] | None) -> None:
    path, where, declare = p.shortage
    if held is None:  # the first-allocation rule's words, as before freezing existed
        message = (f"no address left in {where} for node #{i} (first={p.sub.first})" if path[0] == "nodes"
                   else f"cannot assign {p.name} of {name} from {p.net}: the pool is exhausted")
    else:
        message = (f"no address left in {where} for node #{i} ({name})" if path[0] == "nodes"
                   else f"cannot assign {p.name} of {name} from {p.net}: the pool is exhausted")
        if held:
            leaving = ", ".join(sorted(set(held.values())))
            message += (f"; {len(held)} address(es) are held back for nodes leaving in this change ({leaving}): "
                        f"write the plan once they are gone, then add {name}"
                        + (f", or declare its {declare}" if declare else ""))
    out.issues.append(InventoryIssue(tuple(i if part == -1 else part for part in path), message, rule="INV-ADDR"))


def _on(hw: Hardware, cache: dict[int, dict[str | int, tuple[int, Hca]]]) -> dict[str | int, tuple[int, Hca]]:
    """(position, HCA) of the first HCA of each netdev name and of each rail without a netdev name."""
    known = cache.get(id(hw))
    if known is None:
        known = cache[id(hw)] = {}
        for pos, h in enumerate(hw.hcas):
            key = h.netdev if h.netdev is not None else h.rail
            if key is not None:
                known.setdefault(key, (pos, h))
    return known


def _allocate_ipoib(index: Resolved, j: int, ib: IpoibSubnet, out: Addresses, locks: dict[tuple[str, str | None], str],
                    frozen: Allocations, reserved: set[int], hcas: dict[int, dict[str | int, tuple[int, Hca]]]) -> None:
    net = IPNetwork(str(ib.cidr))
    members: list[tuple[int, str]] = []
    guids: dict[str, str | None] = {}
    hardware = index.hardware
    for i, node in enumerate(index.inv.nodes):
        on = _on(hardware[node.name], hcas)
        by_name, by_rail = on.get(ib.name), on.get(ib.rail)
        found = by_name if by_rail is None or (by_name is not None and by_name[0] < by_rail[0]) else by_rail
        if found is None:
            continue
        hca = found[1]
        members.append((i, node.name))
        guids[node.name] = locks.get((node.name, hca.name)) or hca.ports[0].guid
    if ib.assign == "guid":  # the host part is the port GUID's low bits
        hosts, mask = _Hosts.of(net), int(net.hostmask)
        for _, name in members:
            guid = guids[name]
            ip = None if guid is None else hosts.at(int(guid, 16) & mask)
            if ip is None:
                out.issues.append(InventoryIssue(
                    ("addressing", "ipoib", j),
                    f"cannot assign {ib.name} of {name} from {net}: its port GUID is not known yet", rule="INV-ADDR"))
                continue
            out.ipoib[(name, ib.name)] = ip
        return
    kept = {name: address_value(x) for name, a in frozen.nodes.items() if (x := a.ipoib.get(ib.name)) is not None}
    released = {address_value(ip): who for ip, who in frozen.released.ipoib.get(ib.name, {}).items()}
    spec = _Pool(ib.name, net, ib, members, {}, kept, released, (("addressing", "ipoib", j), "", ""))
    for name, ip in _fill(spec, reserved, out).items():
        out.ipoib[(name, ib.name)] = ip


def _resolve_nids(nids: list[str], interfaces: list[str], addrs: Addresses) -> tuple[str, ...]:
    """`lus01@o2ib0` -> lus01's address on the file system's first interface; literal NIDs as written."""
    out = []
    for nid in nids:
        host, _, net = nid.partition("@")
        ip = None if _LITERAL.match(host) or not interfaces else addrs.ipoib.get((host, interfaces[0]))
        out.append(nid if ip is None else f"{addrs.text(ip)}@{net}")
    return tuple(out)


def is_named_nid(nid: str) -> bool:
    """True when an MGS NID names a server (`lus01@o2ib0`) instead of giving its address."""
    return not _LITERAL.match(nid.partition("@")[0])


def moves(before: Addresses, after: Addresses, nodes: list[str]) -> list[tuple[str, str, int | None, int | None]]:
    """(node, pool, old, new) for every frozen pool address that differs between two allocations."""
    out = []
    for name in sorted(nodes):
        for pool in after.pools:
            a, b = before.get(name, pool), after.get(name, pool)
            if a != b:
                out.append((name, pool, a, b))
    return out
