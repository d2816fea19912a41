"""Which nodes join the fabric, and which of their HCA ports sits on which rail.

Rail of an HCA port: an HCA with a declared `rail` and a single InfiniBand port puts that
port on its rail. Otherwise the node's InfiniBand ports are numbered in order (HCAs with a
declared rail first, by rail, then the others as declared; ports by number) and the
position is the rail. DPU ports and Ethernet ports never join the fabric.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.fabric import FabricSpec
from ..model.hardware import Hardware
from ..model.index import Index
from .errors import PlanError


@dataclass(frozen=True, slots=True)
class Endpoint:
    hca: str
    port: int
    rate: str


@dataclass(frozen=True, slots=True)
class FabricNode:
    name: str
    rack: str
    u: int
    ports: tuple[Endpoint | None, ...]  # index = rail; None: the node has no port on that rail
    infra: bool = False  # role in fabric.infra_roles: its ports (no None) go to the infrastructure leaves


def rail_ports(hw: Hardware) -> list[tuple[int, Endpoint]]:
    """(rail, endpoint) of every InfiniBand HCA port of `hw`, in rail order."""
    order = sorted(range(len(hw.hcas)), key=lambda i: (hw.hcas[i].rail is None, hw.hcas[i].rail or 0, i))
    out: list[tuple[int, Endpoint]] = []
    position = 0
    for i in order:
        hca = hw.hcas[i]
        ib = sorted((p for p in hca.ports if p.link_layer == "InfiniBand"), key=lambda p: p.port)
        for p in ib:
            rail = hca.rail if hca.rail is not None and len(ib) == 1 else position
            out.append((rail, Endpoint(hca.name, p.port, p.rate)))
            position += 1
    return sorted(out, key=lambda t: t[0])


def fabric_nodes(index: Index, spec: FabricSpec) -> tuple[list[FabricNode], int]:
    """The fabric's nodes in declared order and the rail count (fabric.rails, else the most ports of
    a node on the rail leaves).

    Nodes whose role is not in `spec.roles` or that have no InfiniBand port are left out; nodes
    whose role is in `spec.infra_roles` come back with `infra` set and their ports in rail order.
    """
    roles = set(spec.roles)
    infra_roles = set(spec.infra_roles)
    cache: dict[int, list[tuple[int, Endpoint]]] = {}
    found: list[tuple[str, str, int, list[tuple[int, Endpoint]]]] = []
    infra: list[FabricNode] = []
    for node in index.inv.nodes:
        if node.role not in roles:
            continue
        hw = index.hardware[node.name]
        ports = cache.get(id(hw))
        if ports is None:
            ports = cache[id(hw)] = rail_ports(hw)
        if ports:
            if node.rack not in index.racks:
                raise PlanError(f"node {node.name}: rack {node.rack!r} is not declared",
                                ["declare the rack under `racks`"])
            if node.role in infra_roles:
                infra.append(FabricNode(node.name, node.rack, node.u, tuple(ep for _, ep in ports), infra=True))
            else:
                found.append((node.name, node.rack, node.u, ports))
    rails = spec.rails or max((ports[-1][0] + 1 for *_, ports in found),
                              default=max((len(n.ports) for n in infra), default=1))
    out: list[FabricNode] = []
    for name, rack, u, ports in found:
        slots: list[Endpoint | None] = [None] * rails
        for rail, ep in ports:
            if rail >= rails:
                raise PlanError(
                    f"node {name}: {ep.hca}/{ep.port} is on rail {rail}, but the fabric has {rails} rails",
                    [f"rails: {rail + 1}", f"leave {name}'s role out of fabric.roles"])
            other = slots[rail]
            if other is not None:
                raise PlanError(f"node {name}: {other.hca}/{other.port} and {ep.hca}/{ep.port} are both on "
                                f"rail {rail}",
                                ["give each single-port HCA its own `rail`"])
            slots[rail] = ep
        out.append(FabricNode(name, rack, u, tuple(slots)))
    out.extend(infra)
    if not out:
        raise PlanError(f"no node with an InfiniBand port has a role in fabric.roles ({', '.join(spec.roles)})")
    return out, rails
