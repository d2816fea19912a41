"""The generator: FabricSpec + nodes + racks -> every switch, port assignment, cable and trunk.

Names and ports (all derived from positions, never from counters, so they are stable):

* leaf `leaf-su<SU>-r<rail>` (fat-tree kind: `leaf-su<SU>-<i>`), group = SU index,
  rail = rail; spine `spine<NN>` (3 tiers: `spine-p<pod>-<NN>`), group = pod; core
  `core-<plane>-<NN>`, group = plane. SU/pod/plane/switch numbers in names are 1-based and
  zero-padded to 2 digits; rails and `group` values are 0-based.
* Leaf ports 1..su_size face the nodes: rail-optimized, node k of the SU (0-based) on
  port k+1 of its rail's leaf; fat-tree, port slot k x rails + rail fills the SU's leaves
  in order. Ports su_size+1.. go up: link j to spine s on port su_size + s x p + j + 1.
* Spine ports: the leaf at position i of its pod (i = SU-in-pod x rails + rail) takes
  ports i x p + 1 .. (i+1) x p; in 3 tiers, port spine_down + c x q + m + 1 goes up to
  core c of the spine's plane, landing on core port pod x q + m + 1.
* Cable id: `<switch>.<port>` of the cable's lower switch end (the leaf port for a node
  link, the leaf's up port for leaf-spine, the spine's up port for spine-core): unique
  and a pure function of the position.

Growth order (used for placement and trunk packing, so growth only ever appends): cores;
then per pod its spines and spine-core links; then per SU its leaves, leaf-spine links
and, last, its node links. A leaf is created only for a rail (fat-tree: a leaf index) that
some node of its unit has a port on.

Re-planning (frozen.py): with a frozen fabric, the ideal design for the spec is built with
every frozen element that is still valid kept as it is (switch places, node slots, link
ports, cable ids, runs, trunks and lanes); what is new takes free ports, lanes, panel ports
and units, so the ports above are where new links go when they are free, else the lowest
free port of the same range. HA group members (slots.py) get different leaves, and their
trunked links different trunks and panels.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..catalog import Catalog
from ..model.cabling import Cable
from ..model.ha import ha_partners
from ..model.index import Index
from ..model.inventory import Inventory
from ..model.nodes import Switch
from ..util.gcpause import gc_paused
from .design import Design, resolve
from .endpoints import Endpoint, FabricNode, fabric_nodes
from .errors import PlanError
from .frozen import EMPTY, Frozen
from .keep import KeepFrozen, Sw, Unit
from .media import MediaPicker
from .placement import Floor
from .result import Plan
from .slots import Slot, Units, assign_slots, infra_spread
from .trunks import TrunkPacker

__all__ = ["infra_spread", "plan_fabric"]


def plan_fabric(inv: Inventory, index: Index | None = None, cat: Catalog | None = None,
                frozen: Frozen | None = None) -> Plan:
    """Generate the fabric of `inv` from its `fabric` spec, keeping what `frozen` (default: the
    generated part of `inv`, frozen.py) built where it is still valid. Pure; raises PlanError."""
    spec = inv.fabric
    if spec is None:
        raise PlanError("the inventory has no `fabric` section to plan from")
    index = index if index is not None else Index(inv)
    cat = cat if cat is not None else index.cat
    frozen = Frozen.of(inv) if frozen is None else frozen
    partners = ha_partners(inv)
    nodes, rails = fabric_nodes(index, spec)
    compute = [n for n in nodes if not n.infra]
    infra = [n for n in nodes if n.infra]
    infra_ports = sum(len(n.ports) for n in infra)
    spines_hint = frozen.spines_per_group() if frozen else None
    cores_hint = frozen.cores_per_group() if frozen else None
    links_hint = frozen.leaf_spine_links() if frozen else None
    design = resolve(spec, cat, len(compute), rails, infra_ports, spines_hint=spines_hint, cores_hint=cores_hint,
                     links_hint=links_hint)
    slots = assign_slots(compute, design, frozen, partners)
    used = max((su for su, _ in slots), default=-1) + 1
    if used > design.compute_sus:
        design = resolve(spec, cat, len(compute), rails, infra_ports, units=used, spines_hint=spines_hint,
                         cores_hint=cores_hint, links_hint=links_hint)
    spread = infra_spread(infra, design.infra_leaves, design.leaf_down, frozen, partners) if infra else []
    floor = Floor(index, cat, spec.network_rack_suffix, spec.switch_row)
    builder = _Builder(design, floor, cat, spec.trunk_fiber, frozen, partners)
    with gc_paused():  # tens of thousands of small acyclic models: GC passes would dominate
        builder.build(compute, slots, infra, spread)
    builder.packer.prune()
    return Plan(design, tuple(builder.switches), tuple(builder.cables), tuple(builder.tiers),
                tuple(builder.packer.panels), tuple(builder.packer.trunks), builder.packer.links, frozen)


def _ref(device: str, port: int, hca: str | None = None) -> dict[str, object]:
    """A port reference as the mapping `Cable` validates (built inside pydantic-core: faster than a
    PortRef constructed in Python and then re-checked, measured)."""
    return {"device": device, "port": port, "hca": hca}


class _Builder(KeepFrozen):
    def __init__(self, design: Design, floor: Floor, cat: Catalog, fiber: str | None, frozen: Frozen = EMPTY,
                 partners: Mapping[str, frozenset[str]] | None = None) -> None:
        self.d = design
        self.floor = floor
        self.cat = cat
        self.picker = MediaPicker(floor, cat, fiber)
        self.packer = TrunkPacker(floor, cat, self.picker)
        self.switches: list[Switch] = []
        self.cables: list[Cable] = []
        self.tiers: list[int] = []
        self.loc: dict[str, tuple[str, int]] = {}
        core = design.core or design.spine
        self.rate_ls = cat.slower(design.leaf.rate, design.spine.rate) or design.leaf.rate
        self.rate_sc = cat.slower(design.spine.rate, core.rate) or design.spine.rate
        self.frozen = frozen
        self.partners = partners or {}
        self.constrained = bool(frozen)
        self.kept_sw: dict[str, Switch] = {}
        self.kept_pairs: dict[tuple[str, str], list[tuple[int, int, Cable]]] = {}
        self.kept_hosts: dict[tuple[str, str | None, int], Cable] = {}
        self.kept_run: set[str] = set()
        self.used: dict[str, set[int]] = {}
        self.ids: set[str] = set()
        self.ha_used: dict[str, set[str]] = {}  # HA member -> trunks and panels its links use

    # -- the design's switches and units, before anything is placed ------------------------------
    def _skeleton(self, compute: list[FabricNode], slots: list[Slot], infra: list[FabricNode]
                  ) -> tuple[list[Sw], list[list[str]], list[list[str]], list[Unit]]:
        d = self.d
        sws: list[Sw] = []
        cores: list[list[str]] = []
        if d.tiers == 3 and d.core is not None:
            for plane in range(d.spines_per_pod):
                names = [f"core-{plane + 1:02d}-{c + 1:02d}" for c in range(d.cores_per_plane)]
                sws.extend(Sw(n, "core", d.core, plane, None, -1, plane) for n in names)
                cores.append(names)
        members: dict[int, list[tuple[int, FabricNode]]] = {}
        for node, (su, k) in zip(compute, slots, strict=True):
            members.setdefault(su, []).append((k, node))
        geo = Units(d, {})
        rail_opt = d.kind == "rail-optimized"
        pod_spines: list[list[str]] = []
        units: list[Unit] = []
        for pod in range(d.pods):
            spines = [f"spine{s + 1:02d}" if d.tiers == 2 else f"spine-p{pod + 1:02d}-{s + 1:02d}"
                      for s in range(d.spines_per_pod)]
            if d.rails_per_plane:  # rail planes: each plane its own spines (2 tiers, one pod)
                spines = [f"spine-pl{pl + 1:02d}-{s + 1:02d}" for pl in range(d.planes)
                          for s in range(d.spines_per_pod)]
            mark = len(sws)
            before = len(units)
            first = pod * d.sus_per_pod
            for pos in range(first, min(first + d.sus_per_pod, d.sus)):
                if pos < d.infra_sus:
                    lo = pos * d.unit_leaves
                    count = min(d.unit_leaves, d.infra_leaves - lo)
                    leaves = {i: f"leaf-infra-{lo + i + 1:02d}" for i in range(count)} if infra else {}
                    units.append(Unit(pos, pos - first, leaves, (), True))
                    sws.extend(Sw(n, "leaf", d.leaf, None, None, pod) for n in leaves.values())
                    continue
                su = pos - d.infra_sus
                mine = sorted(members.get(su, []), key=lambda t: t[0])
                if not mine:
                    continue
                if rail_opt and d.leaves_per_rail == 1 and all(None not in node.ports for _, node in mine):
                    used = list(range(d.rails))  # the common case, without a look at every port
                elif rail_opt and d.leaves_per_rail == 1:
                    used = sorted({rail for _, node in mine for rail, ep in enumerate(node.ports) if ep is not None})
                else:
                    used = sorted({geo.leaf_port(k, rail)[0] for k, node in mine
                                   for rail, ep in enumerate(node.ports) if ep is not None})
                leaves = {i: _leaf_name(d, su, i) for i in used}
                units.append(Unit(pos, pos - first, leaves, tuple(mine), False))
                sws.extend(Sw(n, "leaf", d.leaf, su, i // d.leaves_per_rail if rail_opt else None, pod)
                           for i, n in leaves.items())
            if d.tiers == 3 and not any(u.leaves for u in units[before:]):
                spines = []  # every unit of the pod retired: its spines go too
            if d.rails_per_plane:  # group = the rail plane; Sw.plane too (keep.py pairs leaves with it)
                sws[mark:mark] = [Sw(n, "spine", d.spine, s // d.spines_per_pod, None, pod, s // d.spines_per_pod)
                                  for s, n in enumerate(spines)]
            else:
                sws[mark:mark] = [Sw(n, "spine", d.spine, pod, None, pod, s) for s, n in enumerate(spines)]
            pod_spines.append(spines)
        return sws, cores, pod_spines, units

    # -- building, in growth order --------------------------------------------------------------------
    def _switch(self, s: Sw, place: Callable[[], tuple[str, int]]) -> None:
        f = self.kept_sw.get(s.name)
        where = (f.rack, f.u) if f is not None else place()
        self.loc[s.name] = where
        self.switches.append(Switch.model_validate(
            {"name": s.name, "model": s.st.model, "role": s.role, "rack": where[0], "u": where[1],
             "split": s.st.split, "group": s.group, "rail": s.rail}))

    def _link(self, tier: int, cid: str, a: dict[str, object], ra: str, ua: int, b: dict[str, object],
              rate: str, on_trunk: bool = True, who: str = "", kept_id: bool = False) -> None:
        rb, ub = self.loc[b["device"]]  # type: ignore[index]
        run = self.picker.pick(ra, ua, rb, ub, rate, on_trunk)
        trunk: str | None = None
        lane: int | None = None
        fiber = run.fiber_type
        if run.trunked:
            if self.partners and who in self.partners:
                trunk, lane, fiber = self.packer.assign(ra, rb, rate, self._avoid(who))
                self.ha_used.setdefault(who, set()).update((trunk, *self.packer.panels_of(trunk)))
            else:
                trunk, lane, fiber = self.packer.assign(ra, rb, rate)
        if self.constrained and not kept_id and cid in self.ids:  # (only in a re-plan)
            cid = _unique(cid, self.ids)  # a new link on ports whose id a kept cable already carries
        # validated construction: pydantic-core is faster here than model_construct (measured)
        self.cables.append(Cable.model_validate(
            {"id": cid, "a": a, "b": b, "media": run.media, "length_m": run.length_m,
             "fiber_type": fiber, "trunk": trunk, "lane_group": lane, "generated": True}))
        self.tiers.append(tier)

    def _up(self, tier: int, lower: str, port: int, upper: str, upper_port: int, rate: str,
            cid: str | None = None) -> None:
        ra, ua = self.loc[lower]
        self._link(tier, cid or f"{lower}.{port}", _ref(lower, port), ra, ua, _ref(upper, upper_port), rate, True, "",
                   cid is not None)

    def _emit_kept(self, tier: int, c: Cable) -> bool:
        """Append a kept cable whose run is unchanged; False when it must be re-run."""
        if c.id not in self.kept_run:
            return False
        self.cables.append(c)
        self.tiers.append(tier)
        return True

    def _pair(self, tier: int, lo: str, up: str, lo_ideal: list[int], up_ideal: list[int],
              lo_rng: tuple[int, int], up_rng: tuple[int, int], rate: str) -> None:
        """The links between a lower and an upper switch: kept ones, then new ones on free ports
        (their ideal ports first), in lower-port order."""
        if not self.constrained:
            for lp, upp in zip(lo_ideal, up_ideal, strict=True):
                self._up(tier, lo, lp, up, upp, rate)
            return
        kept = self.kept_pairs.get((lo, up), [])
        items: list[tuple[int, int, Cable | None]] = list(kept)
        if len(kept) < len(lo_ideal):
            ul, uu = self.used.setdefault(lo, set()), self.used.setdefault(up, set())
            for _ in range(len(lo_ideal) - len(kept)):
                lp = _free(ul, lo_ideal, lo_rng, lo)
                upp = _free(uu, up_ideal, up_rng, up)
                items.append((lp, upp, None))
        items.sort(key=lambda t: t[0])
        for lp, upp, c in items:
            if c is None or not self._emit_kept(tier, c):
                self._up(tier, lo, lp, up, upp, rate, c.id if c is not None else None)

    def build(self, compute: list[FabricNode], slots: list[Slot], infra: list[FabricNode],
              spread: list[list[tuple[int, int]]]) -> None:
        d = self.d
        sws, cores, pod_spines, units = self._skeleton(compute, slots, infra)
        if self.constrained:
            self._keep_frozen(sws, units, compute, infra, spread)
        by_name = {s.name: s for s in sws}
        for names in cores:
            for name in names:
                self._switch(by_name[name], lambda name=name: self.floor.place_upper(d.core, name))  # type: ignore[misc, arg-type]
        spine_ports = d.spine_down if d.tiers == 3 else d.spine.ports
        it = iter(units)
        unit = next(it, None)
        for pod, spines in enumerate(pod_spines):
            for name in spines:
                self._switch(by_name[name], lambda name=name: self.floor.place_upper(d.spine, name))  # type: ignore[misc]
            if cores:
                q = d.spine_core_links
                assert d.core is not None
                for plane, spine in enumerate(spines):
                    for c, core in enumerate(cores[plane]):
                        base = d.spine_down + c * q
                        self._pair(2, spine, core, [base + m + 1 for m in range(q)],
                                   [pod * q + m + 1 for m in range(q)], (d.spine_down + 1, d.spine.ports),
                                   (1, d.core.ports), self.rate_sc)
            last = (pod + 1) * d.sus_per_pod
            while unit is not None and unit.pos < last:
                self._unit(unit, spines, spine_ports, infra, spread, by_name)
                unit = next(it, None)

    def _unit(self, unit: Unit, spines: list[str], spine_ports: int, infra: list[FabricNode],
              spread: list[list[tuple[int, int]]], by_name: dict[str, Sw]) -> None:
        d = self.d
        new = [n for n in unit.leaves.values() if n not in self.kept_sw]
        if new:
            if unit.infra:
                places = self.floor.place_leaves(infra[0].rack, d.leaf, d.unit_leaves - (len(unit.leaves) - len(new)),
                                                 "the infrastructure leaves")
            else:
                places = self.floor.place_leaves(unit.members[0][1].rack, d.leaf, len(new),
                                                 f"scalable unit {unit.pos - d.infra_sus + 1}")
            where = dict(zip(new, places, strict=False))
        for name in unit.leaves.values():
            self._switch(by_name[name], lambda name=name: where[name])  # type: ignore[misc]
        p = d.leaf_spine_links
        per_plane = d.plane_unit_leaves
        for i, leaf in unit.leaves.items():
            pos = unit.in_pod * per_plane + i % per_plane
            mine = spines
            if d.rails_per_plane:  # the spines of the leaf's own plane only
                plane = i // per_plane
                mine = spines[plane * d.spines_per_pod:(plane + 1) * d.spines_per_pod]
            for s, spine in enumerate(mine):
                if not self.constrained:  # from scratch: every port is the design's own (measured: 0.05 s at 2,048)
                    for j in range(p):
                        self._up(1, leaf, d.leaf_down + s * p + j + 1, spine, pos * p + j + 1, self.rate_ls)
                    continue
                self._pair(1, leaf, spine, [d.leaf_down + s * p + j + 1 for j in range(p)],
                           [pos * p + j + 1 for j in range(p)], (d.leaf_down + 1, d.leaf_down + d.uplinks),
                           (1, spine_ports), self.rate_ls)
        if unit.infra:
            first = unit.pos * d.unit_leaves
            for node, ports in zip(infra, spread, strict=True):
                for ep, (leaf_no, port) in zip(node.ports, ports, strict=True):
                    if leaf_no - first in unit.leaves:
                        assert ep is not None  # infrastructure nodes list their ports without gaps
                        self._host(node, ep, unit.leaves[leaf_no - first], port)
            return
        rail_opt = d.kind == "rail-optimized"
        wide = d.leaves_per_rail > 1
        for k, node in unit.members:
            for rail, ep in enumerate(node.ports):
                if ep is None:
                    continue
                if rail_opt and not wide:
                    leaf, port = unit.leaves[rail], k + 1
                elif rail_opt:
                    leaf, port = unit.leaves[rail * d.leaves_per_rail + k // d.leaf_down], k % d.leaf_down + 1
                else:
                    slot = k * d.rails + rail
                    leaf, port = unit.leaves[slot // d.leaf_down], slot % d.leaf_down + 1
                self._host(node, ep, leaf, port)

    def _host(self, node: FabricNode, ep: Endpoint, leaf: str, port: int) -> None:
        d = self.d
        cid, kept = f"{leaf}.{port}", False
        if self.constrained:
            c = self.kept_hosts.get((node.name, ep.hca, ep.port))
            if c is not None:
                if self._emit_kept(0, c):
                    return
                cid, kept = c.id, True
        if not self.cat.links_up(ep.rate, d.leaf.rate):
            raise PlanError(f"node {node.name}: {ep.hca}/{ep.port} runs {ep.rate}, but the ports of "
                            f"{d.leaf.model} leaves run {d.leaf.rate}{' (split)' if d.leaf.split else ''}: "
                            "they cannot link up", ["a leaf_model (or split) whose ports run "
                                                    f"{ep.rate} or one generation above"])
        rate = self.cat.slower(ep.rate, d.leaf.rate) or d.leaf.rate
        # infrastructure nodes grow apart from the scalable units: their links stay off the MPO trunks,
        # whose lanes and panel ports are handed out in one growth order (no re-packing either way)
        self._link(0, cid, _ref(node.name, ep.port, ep.hca), node.rack, node.u, _ref(leaf, port), rate,
                   not node.infra, node.name, kept)


def _leaf_name(d: Design, su: int, i: int) -> str:
    """Leaf i of scalable unit su: `leaf-su01-r3`, with two or more leaves per rail `leaf-su01-r3-1`
    (0-based leaf of the rail); fat-tree `leaf-su01-5`."""
    if d.kind != "rail-optimized":
        return f"leaf-su{su + 1:02d}-{i}"
    if d.leaves_per_rail == 1:
        return f"leaf-su{su + 1:02d}-r{i}"
    return f"leaf-su{su + 1:02d}-r{i // d.leaves_per_rail}-{i % d.leaves_per_rail}"


def _free(used: set[int], ideal: list[int], rng: tuple[int, int], switch: str) -> int:
    """The first ideal port not in use, else the lowest free port of the range (marked used)."""
    port = next((x for x in ideal if x not in used), None)
    if port is None:
        port = next((x for x in range(rng[0], rng[1] + 1) if x not in used), None)
    if port is None:
        raise PlanError(f"{switch}: no free port left in {rng[0]}-{rng[1]} for a link the design needs")
    used.add(port)
    return port


def _unique(cid: str, ids: set[str]) -> str:
    n = 2
    while f"{cid}-{n}" in ids:
        n += 1
    ids.add(f"{cid}-{n}")
    return f"{cid}-{n}"
