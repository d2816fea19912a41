"""What may be out of service at once during a day-2 change: the HA groups and the drain caps. Pure.

Shared by the planner (which packs the work into waves that respect them) and the verifier
(which proves that every plan does):

* subnet managers (`opensm.sm_nodes`): one at a time, and never the master: a standby takes
  over first (`handover`);
* Lustre servers: one per failover pair (`lustre[].failover_pairs`); a server in no pair is a
  group of one (its file system is unavailable while it is out: the plan warns);
* compute: at most `deploy.max_drain.rack_percent` of a rack's compute nodes and
  `cluster_percent` of all compute nodes drained at once (at least one node each).
  Physically indivisible work may exceed the cap, alone: every compute node of a rack whose
  cooling changes, that moves or that is retired, every compute node cabled to a switch that is
  removed, moved (alone or with its rack) or replaced, the nodes on cables over the trunks of a
  patch panel that moves, nodes that exchange slots or ports, and any of these that overlap
  (`forced_groups`); and, in a wave of its own, every compute node cabled to a switch whose
  firmware is bumped (`Groups.flashed`, day2/firmware.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.index import Index
from ..model.services import target_name
from ..util.unionfind import DisjointSets
from .firmware import bumps, cabled_nodes
from .inventory_diff import InventoryDiff


@dataclass(frozen=True)
class Groups:
    sms: tuple[str, ...]  # subnet-manager nodes, highest priority first
    master: str | None  # the master SM as built (highest priority, first declared)
    partner: dict[str, str]  # Lustre server -> its failover partner
    unpaired: tuple[str, ...]  # Lustre servers in no pair (groups of one)
    compute_rack: dict[str, str]  # compute node -> its rack (as built; new nodes: as wanted)
    rack_cap: dict[str, int]
    cluster_cap: int
    forced: tuple[frozenset[str], ...]  # compute nodes that must be drained together
    flashed: tuple[frozenset[str], ...] = ()  # the compute nodes of each switch whose firmware is bumped
    targets: dict[str, tuple[str, ...]] = field(default_factory=dict)  # Lustre server -> the targets it serves
    takeover: dict[str, str] = field(default_factory=dict)  # target -> the server that takes it over

    def cap_of(self, rack: str) -> int:
        return self.rack_cap.get(rack, 1)

    def within_caps(self, drained: set[str], forced_ok: bool = True) -> str | None:
        """None when the drained compute nodes fit the caps (or are one indivisible group), else why not."""
        per_rack: dict[str, int] = {}
        for host in drained:
            rack = self.compute_rack.get(host)
            if rack is not None:
                per_rack[rack] = per_rack.get(rack, 0) + 1
        total = sum(per_rack.values())
        problem = None
        if total > self.cluster_cap:
            problem = f"{total} compute nodes drained at once (cluster cap {self.cluster_cap})"
        for rack, n in sorted(per_rack.items()):
            if problem is None and n > self.cap_of(rack):
                problem = f"{n} compute nodes of rack {rack} drained at once (rack cap {self.cap_of(rack)})"
        if problem is not None and forced_ok:
            counted = {h for h in drained if h in self.compute_rack}
            if any(counted <= g for g in (*self.forced, *self.flashed)):
                return None
        return problem


def groups(old: Index, new: Index, diff: InventoryDiff) -> Groups:
    sm = new.inv.opensm or old.inv.opensm
    sms: tuple[str, ...] = ()
    master = None
    if old.inv.opensm is not None:
        built = sorted(old.inv.opensm.sm_nodes, key=lambda s: -s.priority)
        master = built[0].node if built else None
    if sm is not None:
        names = [s.node for s in sorted(sm.sm_nodes, key=lambda s: -s.priority)]
        if old.inv.opensm is not None:
            names += [s.node for s in old.inv.opensm.sm_nodes]
        sms = tuple(dict.fromkeys(names))
    partner: dict[str, str] = {}
    servers: list[str] = []
    for index in (old, new):
        for fs in index.inv.lustre:
            servers += fs.servers
            for a, b in getattr(fs, "failover_pairs", ()):
                partner.setdefault(a, b)
                partner.setdefault(b, a)
    unpaired = tuple(dict.fromkeys(s for s in servers if s not in partner))
    compute_rack = {n.name: n.rack for n in new.inv.nodes if n.role == "compute"}
    compute_rack.update({n.name: n.rack for n in old.inv.nodes if n.role == "compute"})
    count: dict[str, int] = {}
    for n in old.inv.nodes:
        if n.role == "compute":
            count[n.rack] = count.get(n.rack, 0) + 1
    cap = new.inv.deploy.max_drain
    rack_cap = {r: max(1, n * cap.rack_percent // 100) for r, n in count.items()}
    cluster_cap = max(1, sum(count.values()) * cap.cluster_percent // 100)
    flashed = {t for b in bumps(old, new) if b.kind == "switches" for t in b.targets}
    # a switch whose firmware is bumped takes every node cabled to it out while it reboots: in a wave of its
    # own (the planner packs no other work with it, so these groups never widen another wave)
    by_switch = tuple(frozenset(n for n in nodes if n in compute_rack)
                      for _, nodes in sorted(cabled_nodes(old, flashed).items())) if flashed else ()
    served: dict[str, list[str]] = {}
    takeover: dict[str, str] = {}
    for fs in old.inv.lustre:  # the targets as built: a server that goes out serves these until it fails them over
        for t in getattr(fs, "targets", ()):
            label = target_name(fs, t)
            served.setdefault(t.server, []).append(label)
            other = t.failover or partner.get(t.server)
            if other is not None:
                takeover[label] = other
    return Groups(sms, master, partner, unpaired, compute_rack, rack_cap, cluster_cap,
                  forced_groups(old, new, diff), by_switch, {s: tuple(ts) for s, ts in served.items()}, takeover)



def replaced_switches(diff: InventoryDiff) -> set[str]:
    """Switches swapped for another unit in place: a new GUID or another model."""
    return {d.name for d in diff.devices
            if d.kind == "switch" and d.change == "changed" and ("guid" in d.fields or "model" in d.fields)}


def moved_racks(diff: InventoryDiff) -> set[str]:
    """Racks that roll to another row or position, with their devices in them."""
    return {d.name for d in diff.devices if d.kind == "rack" and d.change == "moved"}


def moved_panels(old: Index, diff: InventoryDiff) -> set[str]:
    """Patch panels that move: to another rack or U, or with the rack they are in."""
    rolled = moved_racks(diff)
    return ({d.name for d in diff.devices if d.kind == "patch_panel" and d.change == "moved"}
            | {p.name for p in old.inv.patch_panels if p.rack in rolled})


def changed_trunks(diff: InventoryDiff) -> set[str]:
    """Trunks in both inventories that differ (other panels, length, fiber, polarity): laid again."""
    return {d.name for d in diff.devices if d.kind == "trunk" and d.change in ("moved", "changed")}


def relaid_trunks(old: Index, diff: InventoryDiff) -> set[str]:
    """Trunks (as built) pulled and laid again, with the cables patched over them unplugged first and
    plugged after: a trunk that changes itself, or ends at a panel that moves (laid again once it stands)."""
    panels = moved_panels(old, diff)
    at_moved = {t.id for t in old.inv.trunks if t.a_panel in panels or t.b_panel in panels} if panels else set()
    return at_moved | changed_trunks(diff)


def forced_groups(old: Index, new: Index, diff: InventoryDiff) -> tuple[frozenset[str], ...]:
    """Compute nodes that physically must be out together: a rack whose cooling changes or that goes;
    the nodes cabled to a switch that goes, moves or is replaced; nodes that exchange slots (one goes
    where another was) or ports (a cable goes where another was); merged where they share a node."""
    compute = {n.name for n in old.inv.nodes if n.role == "compute"}
    groups_: list[set[str]] = []
    racks = {d.name for d in diff.devices if d.kind == "rack"
             and (d.change in ("removed", "moved") or "cooling" in d.fields)}
    for rack in sorted(racks):
        groups_.append({n.name for n in old.inv.nodes if n.rack == rack} | {n.name for n in new.inv.nodes
                                                                           if n.rack == rack})
    rolled = moved_racks(diff)
    switches = replaced_switches(diff) | {d.name for d in diff.devices
                                          if d.kind == "switch" and d.change in ("removed", "moved")}
    switches |= {s.name for s in old.inv.switches if s.rack in rolled}
    relaid = relaid_trunks(old, diff)
    if relaid:  # the hosts on cables patched over trunks re-laid (changed, or a panel they end at moves)
        groups_.append({e.device for c in old.inv.cables if c.trunk in relaid for e in (c.a, c.b)})
    if switches:
        cabled: dict[str, set[str]] = {}
        for c in old.inv.cables:
            for end, other in ((c.a.device, c.b.device), (c.b.device, c.a.device)):
                if end in switches:
                    cabled.setdefault(end, set()).add(other)
        groups_ += [cabled[s] for s in sorted(cabled)]
    moved = {d.name for d in diff.devices if d.kind == "node" and d.change in ("moved", "added")}
    if moved:
        held = {place: name for name, place in old.places.items()}
        for name in sorted(moved):
            before = held.get(new.places[name])
            if before is not None and before != name:
                groups_.append({name, before})
    changed = [c for c in diff.cables if c.new is not None and c.change in ("added", "moved")]
    if changed:
        at = old.cable_at
        for ch in changed:
            assert ch.new is not None
            for port in (ch.new.a, ch.new.b):
                was = at.get(port.key)
                if was is not None and was.id != ch.new.id:
                    groups_.append({e.device for e in (was.a, was.b, ch.new.a, ch.new.b)})
    merged = _merge(groups_)
    return tuple(frozenset(g & compute) for g in merged if g & compute)


def _merge(groups_: list[set[str]]) -> list[set[str]]:
    """Connected components of sets that share a member."""
    sets: DisjointSets[str] = DisjointSets()
    for g in groups_:
        first = next(iter(g), None)
        for x in g:
            if first is not None:
                sets.union(first, x)
    return sorted((set(members) for members in sets.groups()), key=lambda g: sorted(g))
