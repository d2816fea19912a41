"""Findings about devices rather than links: replaced hardware (GUID), devices that match nothing
declared (and the declared ports they occupy), and devices that share a node description (which
card carries the wrong name, and where it sits)."""

from __future__ import annotations

from ..model.index import Index, PortKey
from ..model.place_text import cable_label, device_floor, port_text
from ..parse.ibnetdiscover import IbNode, IbTopology
from .findings import Finding, Ids, device_ids, ids
from .identify import Binding, DeviceKey, by_description
from .miswire import other_end

# ports of bound devices that an unbound device's port reaches: bound port -> (unbound GUID, its port)
Occupied = dict[PortKey, tuple[str, int]]


def _name(key: DeviceKey) -> str:
    return f"{key[0]} {key[1]}" if key[1] else key[0]


def occupied_ports(binding: Binding, topo: IbTopology) -> tuple[Occupied, dict[str, list[tuple[int, PortKey]]]]:
    """Where unbound devices are plugged: by bound port, and by unbound GUID (its port, the bound port)."""
    by_port: Occupied = {}
    by_guid: dict[str, list[tuple[int, PortKey]]] = {}
    if not binding.unknown:
        return by_port, by_guid
    bound = binding.by_guid
    for link in topo.links:
        for u, k in ((link.a, link.b), (link.b, link.a)):
            if u.guid in bound:
                continue
            key = bound.get(k.guid)
            if key is not None:
                port = (key[0], key[1], k.port)
                by_port[port] = (u.guid, u.port)
                by_guid.setdefault(u.guid, []).append((u.port, port))
    return by_port, by_guid


def identity_findings(
    index: Index, binding: Binding, topo: IbTopology, plugged: dict[str, list[tuple[int, PortKey]]]
) -> list[Finding]:
    out: list[Finding] = []
    for node, key, locked in binding.guid_mismatch:
        name = _name(key)
        out.append(
            Finding(
                "FAB-GUID-MISMATCH",
                "error",
                name,
                f"{name} answers with GUID {node.guid}, the locked GUID is {locked}: the hardware was replaced",
                expected=locked,
                observed=node.guid,
                action=(
                    f"confirm the replacement of {name} ({device_floor(index, key[0])}), then run "
                    "`clusterforge learn` to lock the new GUID and re-render the OpenSM GUID files"
                ),
                floor=device_floor(index, key[0]),
                **device_ids(key),
            )
        )
    in_dups = {n.guid for _, nodes in binding.duplicate_desc for n in nodes}
    for node in binding.unknown:
        if node.guid not in in_dups:  # described by its FAB-DUP-DESC finding
            out.append(_unknown(index, binding, node, sorted(plugged.get(node.guid, []))))
    for desc, nodes in binding.duplicate_desc:
        out.append(_duplicate(index, binding, topo, desc, nodes))
    return out


def _unknown(index: Index, binding: Binding, node: IbNode, ports: list[tuple[int, PortKey]]) -> Finding:
    declared = [(q, p, index.cable_at[p]) for q, p in ports if p in index.cable_at]
    details = tuple(
        f"at {port_text(p)} (its port {q}): "
        + (
            f"declared cable {cable_label(c)} to {port_text(other_end(c, p))} is expected there"
            if (c := index.cable_at.get(p)) is not None
            else "no cable is declared there"
        )
        for q, p in ports
    )
    kind = node.kind
    message = f"{kind} {node.guid} {node.name!r} matches no declared device"
    if ports:
        message += f"; it is plugged into {_short([p for _, p in ports])}"
    bound = set(binding.by_guid.values())
    owners = {other_end(c, p)[:2] for _, p, c in declared}
    if declared and len(owners) == 1 and (owner := next(iter(owners))) not in bound:
        owner_name = _name(owner)
        message += f", where {owner_name} is declared ({len(declared)} of its cables reach it)"
        action = (
            f"if it is {owner_name} ({device_floor(index, owner[0])}), give it the node description "
            f"{owner_name!r} (or lock its GUID with `clusterforge learn`); otherwise remove it and plug "
            f"{owner_name}'s cables back"
        )
    elif declared:
        message += f", on {len(declared)} port(s) where declared cables belong"
        action = "remove it and plug the declared cables back (listed below), or declare it in the inventory"
    else:
        action = "declare it in the inventory, or find and remove it; check its node description"
    floor = ", ".join(f"{d} in {device_floor(index, d)}" for d in dict.fromkeys(p[0] for _, p in ports))
    return Finding(
        "FAB-UNKNOWN-DEVICE",
        "error" if declared else "warning",
        f"{kind} {node.guid}",
        message,
        observed=node.name,
        action=action,
        floor=f"plugged into {floor}" if floor else None,
        details=details,
        covers=tuple(port_text(k) for _, p, c in declared for k in (p, other_end(c, p))),
        **(ids(ports[0][1], cable=index.cable_at.get(ports[0][1])) if ports else Ids()),
    )


def _short(ports: list[PortKey], devices: int = 3) -> str:
    """'leaf01 ports 1/2/3, leaf02 port 4': ports grouped by device, the first `devices` devices named
    (then a count of the other ports; the details list them all)."""
    by_dev: dict[str, list[str]] = {}
    for p in ports:
        by_dev.setdefault(p[0], []).append(f"{p[1]}/{p[2]}" if p[1] else str(p[2]))
    named = list(by_dev.items())[:devices]
    text = ", ".join(f"{d} port{'s' if len(v) > 1 else ''} {'/'.join(v)}" for d, v in named)
    rest = len(ports) - sum(len(v) for _, v in named)
    return f"{text} and {rest} more port(s)" if rest else text


def _duplicate(index: Index, binding: Binding, topo: IbTopology, desc: str, nodes: list[IbNode]) -> Finding:
    guids = {n.guid for n in nodes}
    at: dict[str, list[PortKey]] = {}
    for link in topo.links:
        for own, peer in ((link.a, link.b), (link.b, link.a)):
            if own.guid in guids and (key := binding.by_guid.get(peer.guid)) is not None:
                at.setdefault(own.guid, []).append((key[0], key[1], peer.port))
    named = by_description(index, nodes[0])
    parts: list[str] = []
    details: list[str] = []
    fixes: list[str] = []
    slots: list[str] = []
    misnamed: list[DeviceKey] = []  # the slots whose card must change its description: what the finding is about
    unbound = False  # a device left unbound: its links were not checked, so this is an error
    for n in nodes:
        ports = sorted(at.get(n.guid, []))
        where = f" on {_short(ports, 2)}" if ports else ""
        key = binding.by_guid.get(n.guid)
        how = {"guid": "its locked GUID", "position": "its position"}.get(binding.how.get(n.guid, ""), "")
        if key is None:  # not bound (switches are not bound by position): the slot its cables say
            owners = {other_end(c, p)[:2] for p in ports if (c := index.cable_at.get(p)) is not None}
            key = next(iter(owners)) if len(owners) == 1 else None
            how = "the declared cables on its ports"
            unbound = True
        if key is None:
            parts.append(f"{n.guid}{where} (matches no declared slot)")
            details.append(f"{n.guid}{where}: no declared device is bound to it")
            fixes.append(f"find {n.guid}{where} and give it its own node description")
            continue
        slot = _name(key)
        slots.append(key[0])
        wrong = named is None or named != key
        parts.append(f"{n.guid}{where} is {slot} (by {how})" + (", misnamed" if wrong and named else ""))
        details.append(
            f"{n.guid}{where}: the declared slot of {slot} ({device_floor(index, key[0])}), bound by {how}"
            + ("; its description is wrong" if wrong and named else "")
        )
        if wrong:
            misnamed.append(key)
            how_to = (
                f"on {key[0]}: `echo {slot!r} > /sys/class/infiniband/{key[1]}/node_desc`"
                if key[1]
                else "its system name"
            )
            fixes.append(
                f"set the node description of {slot} (GUID {n.guid}, {device_floor(index, key[0])}) to {slot!r} "
                f"({how_to}, or OpenSM's node-name-map)"
            )
    declared = f" (the name of {_name(named)})" if named else ""
    return Finding(
        "FAB-DUP-DESC",
        "error" if unbound else "warning",
        desc,
        f"{len(nodes)} devices share the node description {desc!r}{declared}: " + "; ".join(parts),
        expected="one device per node description",
        observed=", ".join(n.guid for n in nodes),
        action="; ".join(fixes),
        floor=", ".join(f"{d} in {device_floor(index, d)}" for d in dict.fromkeys(slots)) or None,
        details=tuple(details),
        **(device_ids(about) if (about := next(iter(misnamed), named)) is not None else Ids()),
    )
