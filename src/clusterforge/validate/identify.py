"""Bind the devices ibnetdiscover saw to the devices the inventory declares.

Order of evidence: a locked GUID, then the node description (switch name, or the
"<host> <hca>" form OpenSM and the lab use; Mellanox "MF0;<name>:<model>/U1" switch
descriptions are understood too), then position: a CA whose description says nothing
useful but sits on a declared switch port whose declared peer is still unbound.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..model.index import Index
from ..parse.ibnetdiscover import IbNode, IbTopology

DeviceKey = tuple[str, str | None]  # (device, hca) — hca None for switches


@dataclass
class Binding:
    by_guid: dict[str, DeviceKey] = field(default_factory=dict)  # observed node GUID -> declared
    how: dict[str, str] = field(default_factory=dict)  # observed GUID -> "guid"|"description"|"position"
    guid_mismatch: list[tuple[IbNode, DeviceKey, str]] = field(default_factory=list)  # locked GUID
    unknown: list[IbNode] = field(default_factory=list)
    duplicate_desc: list[tuple[str, list[IbNode]]] = field(default_factory=list)


def locked_guids(index: Index) -> dict[DeviceKey, str]:
    """Declared or learned node GUID of every switch and HCA that has one."""
    out: dict[DeviceKey, str] = {}
    for sw in index.inv.switches:
        if sw.guid:
            out[(sw.name, None)] = sw.guid
    for name, guid in index.inv.guid_locks.switches.items():
        out[(name, None)] = guid
    for node in index.inv.nodes:
        for hca in index.hardware[node.name].hcas:
            if hca.node_guid:
                out[(node.name, hca.name)] = hca.node_guid
    for ref, guid in index.inv.guid_locks.hcas.items():
        out[(ref.device, ref.hca)] = guid
    return out


def by_description(index: Index, node: IbNode) -> DeviceKey | None:
    desc = node.name.strip()
    if node.kind == "switch":
        if desc in index.switches:
            return (desc, None)
        if ";" in desc:  # Mellanox: MF0;leaf01:MQM8700/U1
            name = desc.split(";", 1)[1].split(":", 1)[0]
            if name in index.switches:
                return (name, None)
        return None
    parts = desc.split()
    if len(parts) >= 2 and parts[0] in index.nodes:
        hca = parts[1]
        if index.hca(parts[0], hca) is not None:
            return (parts[0], hca)
    return None


def bind(index: Index, topo: IbTopology) -> Binding:
    out = Binding()
    locked = locked_guids(index)
    guid_owner = {g: k for k, g in locked.items()}
    nodes = list(topo.switches) + list(topo.cas)
    descs = Counter(n.name.strip() for n in nodes)
    dups = {d for d, c in descs.items() if c > 1 and d}
    for d in sorted(dups):
        out.duplicate_desc.append((d, [n for n in nodes if n.name.strip() == d]))
    taken: set[DeviceKey] = set()
    for node in nodes:
        key = guid_owner.get(node.guid)
        if key is not None:
            out.by_guid[node.guid], out.how[node.guid] = key, "guid"
            taken.add(key)
    for node in nodes:
        if node.guid in out.by_guid or node.name.strip() in dups:
            continue
        key = by_description(index, node)
        if key is None or key in taken:
            continue
        out.by_guid[node.guid], out.how[node.guid] = key, "description"
        taken.add(key)
        if key in locked and locked[key] != node.guid:
            out.guid_mismatch.append((node, key, locked[key]))
    _bind_by_position(index, topo, out, taken)
    for guid, key in out.by_guid.items():
        if out.how[guid] == "position" and key in locked and locked[key] != guid:
            node = next(n for n in nodes if n.guid == guid)
            out.guid_mismatch.append((node, key, locked[key]))
    out.unknown = [n for n in nodes if n.guid not in out.by_guid]
    return out


def _bind_by_position(index: Index, topo: IbTopology, out: Binding, taken: set[DeviceKey]) -> None:
    """An unbound CA on a declared switch port takes that port's declared peer HCA."""
    for link in topo.links:
        for ca_end, sw_end in ((link.a, link.b), (link.b, link.a)):
            if ca_end.kind != "ca" or ca_end.guid in out.by_guid:
                continue
            sw = out.by_guid.get(sw_end.guid)
            if sw is None or sw[1] is not None:
                continue
            cable = index.cable_at.get((sw[0], None, sw_end.port))
            if cable is None:
                continue
            peer = cable.b if cable.a.key == (sw[0], None, sw_end.port) else cable.a
            key: DeviceKey = (peer.device, peer.hca)
            if peer.hca is None or key in taken:
                continue
            out.by_guid[ca_end.guid], out.how[ca_end.guid] = key, "position"
            taken.add(key)
