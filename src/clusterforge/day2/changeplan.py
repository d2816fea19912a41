"""From two inventories to the ordered day-2 change plan: rack by rack, then the fabric. Pure.

Order (each rack in floor order: row index, then position; racks that only the old
inventory has come last):

1. per rack: `drain` the hosts the work interrupts -> `unplug` cables that go or change ->
   `remove` devices that go (or move) -> `install` racks and devices that come (or moved)
   -> `plug` cables that come or changed -> `relabel` -> `deploy` the rack's changed hosts
   (one command per set of components);
2. `fabric`: the subnet managers' OpenSM files (root GUIDs, node-name-map, partitions),
   which OpenSM re-reads, once every rack is cabled;
3. `validate` the fabric and hosts against the new inventory;
4. `resume` the drained hosts, rack by rack, once validation is clean.

A cable's work is done in the rack of its `a` end (the node or lower switch). A host is
drained when one of its cables is unplugged or re-patched, when it moves or its hardware
changes, when it leaves, or when a deploy change interrupts it (host_diff.py). Commands
are argv lists built from inventory names, never shell strings.
"""

from __future__ import annotations

from ..model.cabling import Cable
from ..model.index import Index, PortKey
from .host_diff import LEAVES, HostChange, diff_hosts
from .inventory_diff import CableChange, DeviceChange, InventoryDiff, diff_inventories
from .steps import ChangePlan, Phase, Step

_BEFORE_TRUNKS: tuple[Phase, ...] = ("drain", "takeout", "unplug", "remove", "install")
_AFTER_TRUNKS: tuple[Phase, ...] = ("plug", "relabel", "deploy")
_INTERRUPTING = ("moved", "replaced", "rerouted", "removed")
_HARDWARE = ("gpus", "hcas", "dpus", "u_height", "profile")


def change_plan(old: Index, new: Index, env: str, env_name: str) -> ChangePlan:
    """The ordered plan that takes the cluster built from `old` to `new`.

    `env` is the new inventory's path as the commands in the plan name it; `env_name` the
    environment's name in rendered files.
    """
    diff = diff_inventories(old, new)
    hosts = tuple(diff_hosts(old, new, env_name))
    return _Planner(old, new, env, diff, hosts).build()


class _Planner:
    def __init__(self, old: Index, new: Index, env: str, diff: InventoryDiff, hosts: tuple[HostChange, ...]):
        self.old, self.new, self.env, self.diff, self.hosts = old, new, env, diff, hosts
        self.by_rack: dict[str | None, dict[Phase, list[tuple[str, str, tuple[str, ...]]]]] = {}
        self.drain: dict[str, list[str]] = {}  # host -> reasons, in the order found
        self.warnings: list[str] = []
        self.trunk_steps: list[tuple[str, str]] = []

    # -- where things are ---------------------------------------------------------------
    def _rack_of(self, device: str, index: Index) -> str:
        place = index.places.get(device)
        return place[0] if place is not None else "?"

    def _where(self, key: PortKey, index: Index) -> str:
        device, hca, port = key
        at = index.places.get(device)
        place = f" [{at[0]} U{at[1]}]" if at is not None else ""
        return f"{device} {hca}/{port}{place}" if hca else f"{device} port {port}{place}"

    def _cable_text(self, c: Cable, index: Index) -> str:
        label = f" ({c.label})" if c.label else ""
        route = f", trunk {c.trunk} lanes {c.lane_group}" if c.trunk else ""
        return (f"{self._where(c.a.key, index)} - {self._where(c.b.key, index)}{label}: "
                f"{c.media} {c.length_m:g} m{' ' + c.fiber_type if c.fiber_type else ''}{route}")

    def _add(self, rack: str | None, phase: Phase, subject: str, action: str, argv: tuple[str, ...] = ()) -> None:
        self.by_rack.setdefault(rack, {}).setdefault(phase, []).append((subject, action, argv))

    def _drain(self, host: str, why: str) -> None:
        reasons = self.drain.setdefault(host, [])
        if why not in reasons:
            reasons.append(why)

    # -- the plan -------------------------------------------------------------------------
    def build(self) -> ChangePlan:
        self._cables()
        self._devices()
        for h in self.hosts:
            for why in h.disruptive:
                self._drain(h.host, why)
        self._drains()
        fabric_hosts = self._deploys()
        steps = self._ordered(fabric_hosts)
        return ChangePlan(self.env, self.diff, self.hosts, tuple(steps), tuple(self.drain), tuple(self.warnings))

    def _cables(self) -> None:
        old, new = self.old, self.new
        for c in self.diff.cables:
            if c.change in _INTERRUPTING and c.old is not None:
                what = {"moved": "unplug (it moves)", "replaced": "unplug (a new cable replaces it)",
                        "rerouted": "unplug at the patch panels (re-patched)", "removed": "unplug and remove"}
                self._add(self._rack_of(c.old.a.device, old), "unplug", c.old.id,
                          f"{what[c.change]}: {self._cable_text(c.old, old)}")
                for end in (c.old.a, c.old.b):
                    if end.device in old.nodes:
                        self._drain(end.device, f"cable {c.old.id} is unplugged")
            if c.change in ("added", "moved", "replaced", "rerouted") and c.new is not None:
                self._add(self._rack_of(c.new.a.device, new), "plug", c.new.id,
                          f"plug: {self._cable_text(c.new, new)}")
            if c.change == "relabelled" and c.old is not None and c.new is not None:
                self._add(self._rack_of(c.new.a.device, new), "relabel", c.new.id, _relabel(c))

    def _devices(self) -> None:
        for d in self.diff.devices:
            noun = d.kind.replace("_", " ")
            if d.kind == "rack":
                if d.change == "added":
                    self._add(d.name, "install", d.name, f"place rack in row {_pl(d.new_place)}")
                elif d.change == "removed":
                    self._add(d.name, "remove", d.name, f"take the rack out of row {_pl(d.old_place)}")
                elif d.change == "moved":
                    self._add(d.name, "remove", d.name, f"move the rack: row {_pl(d.old_place)} -> {_pl(d.new_place)}")
                else:
                    self._add(d.name, "install", d.name, f"rack settings: {', '.join(d.fields)}")
                continue
            if d.kind == "trunk":
                self._trunk(d)
                continue
            if d.change in ("removed", "moved") and d.old_place is not None:
                verb = "take out" if d.change == "removed" else "take out (it moves to " + _u(d.new_place) + ")"
                self._add(d.old_place[0], "remove", d.name, f"{verb} {noun} at {_u(d.old_place)}")
                if d.kind == "node":
                    self._drain(d.name, "it is taken out of its rack" if d.change == "moved" else LEAVES)
            if d.change in ("added", "moved") and d.new_place is not None:
                self._add(d.new_place[0], "install", d.name, f"install {noun} at {_u(d.new_place)}"
                          + (f" ({_model(self.new, d)})" if _model(self.new, d) else ""))
            if d.change == "changed" and d.new_place is not None:
                hardware = [f for f in d.fields if f.split(".")[0] in _HARDWARE or f.startswith("hardware.")]
                addresses = [f for f in d.fields if f.startswith("address ")]
                if d.kind == "node" and addresses:
                    self._drain(d.name, "its addresses change (" + ", ".join(f[8:] for f in addresses) + ")")
                if hardware and d.kind == "node":
                    self._drain(d.name, f"hardware changes ({', '.join(hardware)})")
                    self._add(d.new_place[0], "install", d.name, f"change hardware: {', '.join(hardware)}")
                elif d.kind == "switch" and "model" in d.fields:
                    self._add(d.new_place[0], "install", d.name,
                              f"replace the switch with a {self.new.switches[d.name].model}")
                else:
                    rest = [f for f in d.fields if not f.startswith("address ")]
                    if rest:
                        self._add(d.new_place[0], "install", d.name, f"update {', '.join(rest)}")
                if addresses:
                    self.warnings.append(f"{d.kind} {d.name} is renumbered ({', '.join(f[8:] for f in addresses)}): "
                                         "a node inserted before it in its address pool shifts it; add new nodes "
                                         "at the end of the list, or declare mgmt_ip/bmc_ip")

    def _trunk(self, d: DeviceChange) -> None:
        """Trunks join panels in two racks: laid (or pulled) in a pass of their own, once every rack's
        old cables are out and new panels in, before any cable is patched onto them."""
        trunk = (self.new.trunks.get(d.name) if d.change != "removed" else None) or self.old.trunks.get(d.name)
        index = self.new if d.change != "removed" else self.old
        panels = {p.name: p for p in index.inv.patch_panels}
        ends = "" if trunk is None else " - ".join(
            f"{name} [{panels[name].rack} U{panels[name].u}]" if name in panels else name
            for name in (trunk.a_panel, trunk.b_panel))
        if d.change == "removed":
            self.trunk_steps.append((d.name, f"pull the MPO-24 trunk out: {ends}"))
        elif d.change == "added" and trunk is not None:
            self.trunk_steps.append((d.name, f"lay the MPO-24 trunk {ends} ({trunk.fiber_type}, {trunk.length_m:g} m)"))
        else:
            self.trunk_steps.append((d.name, f"re-lay the MPO-24 trunk {ends}: {', '.join(d.fields) or 'panels'}"))

    def _drains(self) -> None:
        policy = self.new.inv.deploy.reboot
        for host, reasons in self.drain.items():
            index = self.old if host not in self.new.nodes else self.new
            node = index.nodes.get(host)
            if node is None:
                continue
            hook = node.role == "compute" and bool(policy.drain)
            argv = tuple(p.replace("{host}", host) for p in policy.drain) if hook else ()
            verb = "drain" if node.role == "compute" else f"take out of service ({node.role})"
            self._add(self._rack_of(host, self.old if host in self.old.nodes else self.new),
                      "drain" if hook else "takeout", host, f"{verb}: {'; '.join(reasons)}", argv)

    def _deploys(self) -> list[HostChange]:
        """Rack deploy steps; returns the hosts whose OpenSM files change (deployed once the racks are cabled)."""
        fabric: list[HostChange] = []
        groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
        for h in self.hosts:
            if h.change == "removed":
                continue
            if "opensm" in h.component_names:
                fabric.append(h)
            comps = tuple(c for c in h.component_names if c != "opensm")
            if comps:
                groups.setdefault((h.rack, comps), []).append(h.host)
        detail = {h.host: h for h in self.hosts}
        for (rack, comps), hosts in groups.items():
            argv = ("clusterforge", "deploy", self.env, "--limit", ",".join(hosts),
                    *(x for c in comps for x in ("--component", c)))
            first = detail[hosts[0]]
            if first.change == "added":
                what = "a new host, every component"
            else:
                what = "; ".join(str(c) for c in first.components if c.component in comps)
            reboot = " (reboots)" if any(detail[h].reboot for h in hosts) else ""
            self._add(rack, "deploy", _hosts_text(hosts), f"deploy {', '.join(comps)}{reboot}: {what}", argv)
        return fabric

    def _ordered(self, fabric_hosts: list[HostChange]) -> list[Step]:
        steps: list[Step] = []

        def emit(phase: Phase, rack: str | None, subject: str, action: str, argv: tuple[str, ...] = ()) -> None:
            steps.append(Step(len(steps) + 1, phase, rack, subject, action, argv))

        def racks(phases: tuple[Phase, ...]) -> None:
            for rack in self._rack_order():
                for phase in phases:
                    for subject, action, argv in self.by_rack.get(rack, {}).get(phase, []):
                        emit(phase, rack, subject, action, argv)

        if self.trunk_steps:  # two passes: out and in, the trunks, then patch and deploy
            racks(_BEFORE_TRUNKS)
            for subject, action in self.trunk_steps:
                emit("trunks", None, subject, action)
            racks(_AFTER_TRUNKS)
        else:
            racks((*_BEFORE_TRUNKS, *_AFTER_TRUNKS))
        if fabric_hosts:
            hosts = [h.host for h in fabric_hosts]
            what = "; ".join(str(c) for c in fabric_hosts[0].components if c.component == "opensm")
            emit("fabric", None, _hosts_text(hosts),
                 f"deploy OpenSM's files (the subnet manager re-reads them): {what}",
                 ("clusterforge", "deploy", self.env, "--limit", ",".join(hosts), "--component", "opensm"))
        if steps:
            emit("validate", None, "fabric and hosts", "validate against the new inventory; resume only when clean",
                 ("clusterforge", "validate", self.env))
        policy = self.new.inv.deploy.reboot
        for host in self.drain:
            node = self.new.nodes.get(host)
            if node is None:
                continue  # it left
            hook = node.role == "compute" and bool(policy.resume)
            argv = tuple(p.replace("{host}", host) for p in policy.resume) if hook else ()
            emit("resume" if hook else "return", node.rack, host,
                 "resume" if node.role == "compute" else "return to service", argv)
        return steps

    def _rack_order(self) -> list[str]:
        def key(index: Index, name: str) -> tuple[int, int, str]:
            rack = index.racks[name]
            rows = {r.name: r.index for r in index.inv.site.rows}
            return (rows.get(rack.row, 1 << 30), rack.position, name)

        new = sorted(self.new.racks, key=lambda r: key(self.new, r))
        gone = sorted((r for r in self.old.racks if r not in self.new.racks), key=lambda r: key(self.old, r))
        known = set(new) | set(gone)
        stray = sorted(r for r in self.by_rack if r is not None and r not in known)
        return [*new, *gone, *stray]


def _relabel(c: CableChange) -> str:
    assert c.old is not None and c.new is not None
    parts = []
    if c.old.id != c.new.id:
        parts.append(f"id {c.old.id} -> {c.new.id}")
    if c.old.label != c.new.label:
        parts.append(f"label {c.old.label or '-'} -> {c.new.label or '-'}")
    return "relabel: " + ", ".join(parts)


def _u(place: tuple[str, int] | None) -> str:
    return "?" if place is None else f"{place[0]} U{place[1]}"


def _pl(place: tuple[str, int] | None) -> str:
    return "?" if place is None else f"{place[0]} position {place[1]}"


def _model(index: Index, d: DeviceChange) -> str:
    if d.kind == "switch" and d.name in index.switches:
        return index.switches[d.name].model
    if d.kind == "node" and d.name in index.nodes:
        return index.nodes[d.name].profile or ""
    return ""


def _hosts_text(hosts: list[str]) -> str:
    return hosts[0] if len(hosts) == 1 else f"{hosts[0]} .. {hosts[-1]} ({len(hosts)} hosts)"
