"""Names, GUIDs, cable ids and labels must each be unique."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import InventoryIssue, format_path
from ..errors import Path as ErrPath
from ..model.index import Index


def _dups(items: Iterable[tuple[str, ErrPath]], what: str) -> list[InventoryIssue]:
    first: dict[str, ErrPath] = {}
    out: list[InventoryIssue] = []
    for value, path in items:
        if value in first:
            out.append(InventoryIssue(path, f"duplicate {what} {value!r} (first at {format_path(first[value])})",
                rule="INV-DUP"))
        else:
            first[value] = path
    return out


def check(index: Index) -> list[InventoryIssue]:
    inv = index.inv
    out: list[InventoryIssue] = []
    out += _dups(((r.name, ("site", "rows", i, "name")) for i, r in enumerate(inv.site.rows)), "row")
    out += _dups(((r.name, ("racks", i, "name")) for i, r in enumerate(inv.racks)), "rack")
    out += _dups(((p.name, ("profiles", i, "name")) for i, p in enumerate(inv.profiles)), "profile")
    devices = [(n.name, ("nodes", i, "name")) for i, n in enumerate(inv.nodes)]
    devices += [(s.name, ("switches", i, "name")) for i, s in enumerate(inv.switches)]
    devices += [(p.name, ("patch_panels", i, "name")) for i, p in enumerate(inv.patch_panels)]
    out += _dups(devices, "device name")
    cables = [(c.id, ("cables", i, "id")) for i, c in enumerate(inv.cables)]
    cables += [(t.id, ("trunks", i, "id")) for i, t in enumerate(inv.trunks)]
    out += _dups(cables, "cable id")
    out += _dups(
        ((c.label, ("cables", i, "label")) for i, c in enumerate(inv.cables) if c.label), "cable label"
    )
    out += _dups(_guids(index), "GUID")
    for i, node in enumerate(inv.nodes):
        hw = index.hardware[node.name]
        names = [(h.name, ("nodes", i, "hcas", j, "name")) for j, h in enumerate(hw.hcas)]
        names += [(d.name, ("nodes", i, "dpus", j, "name")) for j, d in enumerate(hw.dpus)]
        out += _dups(names, f"HCA name on {node.name}:")
    return out


def _guids(index: Index) -> Iterable[tuple[str, ErrPath]]:
    inv = index.inv
    for i, sw in enumerate(inv.switches):
        if sw.guid:
            yield sw.guid, ("switches", i, "guid")
    for i, node in enumerate(inv.nodes):
        if node.hcas is None:
            continue  # profile hardware carries no per-node GUIDs
        for j, hca in enumerate(node.hcas):
            if hca.node_guid:
                yield hca.node_guid, ("nodes", i, "hcas", j, "node_guid")
            for k, port in enumerate(hca.ports):
                if port.guid and port.guid != hca.node_guid:
                    yield port.guid, ("nodes", i, "hcas", j, "ports", k, "guid")
    locks = inv.guid_locks
    for name, guid in locks.switches.items():
        yield guid, ("guid_locks", "switches", name)
    for ref, guid in locks.hcas.items():
        yield guid, ("guid_locks", "hcas", str(ref))
    hca_guid = {(ref.device, ref.hca): guid for ref, guid in locks.hcas.items()}
    for pref, guid in locks.ports.items():
        # a CA's port 1 GUID commonly equals its own node GUID: not a duplicate
        if hca_guid.get((pref.device, pref.hca or "")) != guid:
            yield guid, ("guid_locks", "ports", str(pref))
