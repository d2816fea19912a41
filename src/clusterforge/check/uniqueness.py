"""Names, GUIDs, cable ids and labels must each be unique."""

from __future__ import annotations

from collections.abc import Iterable

from ..model.hardware import Hca
from ..model.index import Index
from ..util.errors import InventoryIssue, format_path
from ..util.errors import Path as ErrPath


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
    out += _profile_guids(index)
    for i, node in enumerate(inv.nodes):
        hw = index.hardware[node.name]
        names = [(h.name, ("nodes", i, "hcas", j, "name")) for j, h in enumerate(hw.hcas)]
        names += [(d.name, ("nodes", i, "dpus", j, "name")) for j, d in enumerate(hw.dpus)]
        out += _dups(names, f"HCA name on {node.name}:")
    return out


def _profile_users(index: Index) -> dict[int, list[str]]:
    """Profile index -> the nodes that take their HCAs from it (no `hcas` of their own), in order."""
    inv = index.inv
    at = {p.name: i for i, p in enumerate(inv.profiles)}
    users: dict[int, list[str]] = {}
    for node in inv.nodes:
        if node.hcas is None and node.profile in at:
            users.setdefault(at[node.profile], []).append(node.name)
    return users


def _hca_guids(hcas: Iterable[Hca], at: ErrPath) -> Iterable[tuple[str, ErrPath]]:
    for j, hca in enumerate(hcas):
        if hca.node_guid:
            yield hca.node_guid, (*at, j, "node_guid")
        for k, port in enumerate(hca.ports):
            if port.guid and port.guid != hca.node_guid:
                yield port.guid, (*at, j, "ports", k, "guid")


def _profile_guids(index: Index) -> list[InventoryIssue]:
    """A GUID in a profile's HCAs resolves onto every node of the profile: one GUID for many HCAs."""
    out: list[InventoryIssue] = []
    for i, nodes in _profile_users(index).items():
        if len(nodes) < 2:
            continue
        named = ", ".join(nodes[:3]) + (f" and {len(nodes) - 3} more" if len(nodes) > 3 else "")
        for guid, path in _hca_guids(index.inv.profiles[i].hcas, ("profiles", i, "hcas")):
            out.append(InventoryIssue(path, f"GUID {guid!r} in a profile lands on each of its {len(nodes)} nodes "
                f"({named}): a GUID names one HCA; declare it on the node or in guid_locks", rule="INV-DUP"))
    return out


def _guids(index: Index) -> Iterable[tuple[str, ErrPath]]:
    """Every GUID the model resolves to, where it was declared: a node's own HCAs, or its profile's (once)."""
    inv = index.inv
    for i, sw in enumerate(inv.switches):
        if sw.guid:
            yield sw.guid, ("switches", i, "guid")
    for i, node in enumerate(inv.nodes):
        if node.hcas is not None:
            yield from _hca_guids(node.hcas, ("nodes", i, "hcas"))
    for i in _profile_users(index):
        yield from _hca_guids(inv.profiles[i].hcas, ("profiles", i, "hcas"))
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
