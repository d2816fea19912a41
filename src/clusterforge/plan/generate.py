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
and, last, its node links.
"""

from __future__ import annotations

from typing import cast

from ..catalog import Catalog
from ..gcpause import gc_paused
from ..model.cabling import Cable
from ..model.index import Index
from ..model.inventory import Inventory
from ..model.nodes import Switch
from .design import Design, SwitchType, resolve
from .endpoints import Endpoint, FabricNode, fabric_nodes
from .errors import PlanError
from .media import MediaPicker
from .placement import Floor
from .result import Plan
from .trunks import TrunkPacker


def plan_fabric(inv: Inventory, index: Index | None = None, cat: Catalog | None = None) -> Plan:
    """Generate the fabric of `inv` from its `fabric` spec. Pure; raises PlanError."""
    spec = inv.fabric
    if spec is None:
        raise PlanError("the inventory has no `fabric` section to plan from")
    index = index if index is not None else Index(inv)
    cat = cat if cat is not None else index.cat
    nodes, rails = fabric_nodes(index, spec)
    compute = [n for n in nodes if not n.infra]
    infra = [n for n in nodes if n.infra]
    design = resolve(spec, cat, len(compute), rails, sum(len(n.ports) for n in infra))
    floor = Floor(index, cat, spec.network_rack_suffix, spec.switch_row)
    builder = _Builder(design, floor, cat, spec.trunk_fiber)
    with gc_paused():  # tens of thousands of small acyclic models: GC passes would dominate
        builder.build(compute, infra)
    return Plan(design, tuple(builder.switches), tuple(builder.cables), tuple(builder.tiers),
                tuple(builder.packer.panels), tuple(builder.packer.trunks), builder.packer.links)


def _ref(device: str, port: int, hca: str | None = None) -> dict[str, object]:
    """A port reference as the mapping `Cable` validates (built inside pydantic-core: faster than a
    PortRef constructed in Python and then re-checked, measured)."""
    return {"device": device, "port": port, "hca": hca}


class _Builder:
    def __init__(self, design: Design, floor: Floor, cat: Catalog, fiber: str | None) -> None:
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

    def _switch(self, name: str, role: str, st: SwitchType, where: tuple[str, int],
                group: int | None, rail: int | None) -> None:
        self.loc[name] = where
        self.switches.append(Switch.model_validate(
            {"name": name, "model": st.model, "role": role, "rack": where[0], "u": where[1], "split": st.split,
             "group": group, "rail": rail}))

    def _link(self, tier: int, cid: str, a: dict[str, object], ra: str, ua: int, b: dict[str, object],
              rate: str, on_trunk: bool = True) -> None:
        rb, ub = self.loc[cast(str, b["device"])]
        run = self.picker.pick(ra, ua, rb, ub, rate, on_trunk)
        trunk: str | None = None
        lane: int | None = None
        fiber = run.fiber_type
        if run.trunked:
            trunk, lane, fiber = self.packer.assign(ra, rb, rate)
        # validated construction: pydantic-core is faster here than model_construct (measured)
        self.cables.append(Cable.model_validate(
            {"id": cid, "a": a, "b": b, "media": run.media, "length_m": run.length_m,
             "fiber_type": fiber, "trunk": trunk, "lane_group": lane, "generated": True}))
        self.tiers.append(tier)

    def _up(self, tier: int, lower: str, port: int, upper: str, upper_port: int, rate: str) -> None:
        ra, ua = self.loc[lower]
        self._link(tier, f"{lower}.{port}", _ref(lower, port), ra, ua, _ref(upper, upper_port), rate)

    def build(self, nodes: list[FabricNode], infra: list[FabricNode]) -> None:
        d = self.d
        cores: list[list[str]] = []
        if d.tiers == 3 and d.core is not None:
            for plane in range(d.spines_per_pod):
                names = [f"core-{plane + 1:02d}-{c + 1:02d}" for c in range(d.cores_per_plane)]
                for name in names:
                    self._switch(name, "core", d.core, self.floor.place_upper(d.core, name), plane, None)
                cores.append(names)
        spread = infra_spread(infra, d.infra_leaves, d.su_size)
        for pod in range(d.pods):
            spines = [f"spine{s + 1:02d}" if d.tiers == 2 else f"spine-p{pod + 1:02d}-{s + 1:02d}"
                      for s in range(d.spines_per_pod)]
            for name in spines:
                self._switch(name, "spine", d.spine, self.floor.place_upper(d.spine, name), pod, None)
            if cores:
                self._spine_core(pod, spines, cores)
            first = pod * d.sus_per_pod
            for pos in range(first, min(first + d.sus_per_pod, d.sus)):
                if pos < d.infra_sus:
                    self._infra_unit(pos, pos - first, infra, spread, spines)
                else:
                    su = pos - d.infra_sus
                    self._unit(su, pos - first, nodes[su * d.su_size:(su + 1) * d.su_size], spines)

    def _spine_core(self, pod: int, spines: list[str], cores: list[list[str]]) -> None:
        d = self.d
        q = d.spine_core_links
        for plane, spine in enumerate(spines):
            for c, core in enumerate(cores[plane]):
                for m in range(q):
                    self._up(2, spine, d.spine_down + c * q + m + 1, core, pod * q + m + 1, self.rate_sc)

    def _unit(self, su: int, in_pod: int, members: list[FabricNode], spines: list[str]) -> None:
        d = self.d
        rail_opt = d.kind == "rail-optimized"
        leaves = [f"leaf-su{su + 1:02d}-{'r' if rail_opt else ''}{i}" for i in range(d.rails)]
        for i, (name, where) in enumerate(zip(leaves, self.floor.place_leaves(
                members[0].rack, d.leaf, d.rails, f"scalable unit {su + 1}"), strict=True)):
            self._switch(name, "leaf", d.leaf, where, su, i if rail_opt else None)
        self._uplinks(in_pod, leaves, spines)
        for k, node in enumerate(members):
            for rail, ep in enumerate(node.ports):
                if ep is None:
                    continue
                if rail_opt:
                    leaf, port = leaves[rail], k + 1
                else:
                    slot = k * d.rails + rail
                    leaf, port = leaves[slot // d.su_size], slot % d.su_size + 1
                self._host(node, ep, leaf, port)

    def _uplinks(self, in_pod: int, leaves: list[str], spines: list[str]) -> None:
        """Leaf i of the unit at position `in_pod` of its pod: p links to every spine of the pod."""
        d = self.d
        p = d.leaf_spine_links
        for i, leaf in enumerate(leaves):
            pos = in_pod * d.rails + i
            for s, spine in enumerate(spines):
                for j in range(p):
                    self._up(1, leaf, d.su_size + s * p + j + 1, spine, pos * p + j + 1, self.rate_ls)

    def _host(self, node: FabricNode, ep: Endpoint, leaf: str, port: int) -> None:
        d = self.d
        if not self.cat.links_up(ep.rate, d.leaf.rate):
            raise PlanError(f"node {node.name}: {ep.hca}/{ep.port} runs {ep.rate}, but the ports of "
                            f"{d.leaf.model} leaves run {d.leaf.rate}{' (split)' if d.leaf.split else ''}: "
                            "they cannot link up", ["a leaf_model (or split) whose ports run "
                                                    f"{ep.rate} or one generation above"])
        rate = self.cat.slower(ep.rate, d.leaf.rate) or d.leaf.rate
        # infrastructure nodes grow apart from the scalable units: their links stay off the MPO trunks,
        # whose lanes and panel ports are handed out in one growth order (no re-packing either way)
        self._link(0, f"{leaf}.{port}", _ref(node.name, ep.port, ep.hca), node.rack, node.u, _ref(leaf, port), rate,
                   on_trunk=not node.infra)

    def _infra_unit(self, pos: int, in_pod: int, infra: list[FabricNode], spread: list[list[tuple[int, int]]],
                    spines: list[str]) -> None:
        """Unit position `pos` of the infrastructure leaves: room for `rails` leaves is kept on the
        floor (so that more infrastructure leaves later move nothing), the ones in use are created."""
        d = self.d
        first = pos * d.rails
        count = min(d.rails, d.infra_leaves - first)
        places = self.floor.place_leaves(infra[0].rack, d.leaf, d.rails, "the infrastructure leaves")
        leaves = [f"leaf-infra-{first + i + 1:02d}" for i in range(count)]
        for name, where in zip(leaves, places, strict=False):
            self._switch(name, "leaf", d.leaf, where, None, None)
        self._uplinks(in_pod, leaves, spines)
        for node, ports in zip(infra, spread, strict=True):
            for ep, (leaf_no, port) in zip(node.ports, ports, strict=True):
                if first <= leaf_no < first + count:
                    assert ep is not None  # infrastructure nodes list their ports without gaps
                    self._host(node, ep, leaves[leaf_no - first], port)


def infra_spread(infra: list[FabricNode], leaves: int, down: int) -> list[list[tuple[int, int]]]:
    """(leaf number, port) of every port of every infrastructure node, in node order.

    Port j of the k-th node goes to leaf (k + j) mod `leaves`, or the next leaf with a free
    port: single-port nodes take turns, a node's ports land on different leaves (where there
    are enough), and a node added at the end takes only ports nobody had. Ports on a leaf are
    taken from 1 up.
    """
    used = [0] * leaves
    out: list[list[tuple[int, int]]] = []
    for k, node in enumerate(infra):
        mine: list[tuple[int, int]] = []
        for j in range(len(node.ports)):
            free = [x for x in ((k + j + step) % leaves for step in range(leaves)) if used[x] < down]
            if not free:
                raise PlanError(f"node {node.name}: no free port left on the {leaves} infrastructure leaves",
                                [f"infra_leaves: {leaves + 1}"])
            taken = {m for m, _ in mine}
            leaf = next((x for x in free if x not in taken), free[0])
            used[leaf] += 1
            mine.append((leaf, used[leaf]))
        out.append(mine)
    return out
