"""Plan checks over any fabric, generated or declared by hand.

* FT-TIER: a cable must join adjacent tiers (node-leaf, leaf-spine, spine-core).
* FT-UNEVEN: in each pod (leaves and spines joined by leaf-spine links) every leaf has
  the same number of links to every spine; in each core plane (spines and cores joined
  by spine-core links) every spine the same number to every core; every pod reaches
  every plane through the same number of spines.
* FT-NO-UPLINK: a leaf (or, with cores, a spine) without uplinks; FT-IDLE: a spine or
  core that nothing below reaches (a warning).
* FT-DISCONNECTED: two leaves with nodes that cannot reach each other.
* RAIL-MIXED / RAIL-LABEL / RAIL-SU (rail-optimized fabrics): a leaf serves one rail,
  the one its `rail` field names, and a node's leaves belong to one scalable unit
  (nodes of `fabric.infra_roles` are exempt: they sit on infrastructure leaves).
* OVERSUB: a leaf's node bandwidth over its uplink bandwidth exceeds the spec's ratio.
* FT-EMPTY-LEAF: a leaf with uplinks and no node (a warning: a switch and its uplinks bought
  for nothing).
* HA-SHARED: two members of an HA group (the SM nodes, a Lustre failover pair) reach the
  fabric through one MPO trunk or one patch panel (a warning; `check` makes one leaf for
  the whole group an error).

Metrics: oversubscription actually achieved (the worst leaf, by bandwidth of the cabled
links), bisection bandwidth (half the narrowest of: node links, leaf-spine links with two
or more leaves, spine-core links with two or more pods), the most switches a packet
crosses between two nodes, and the ports left free on each switch.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from typing import Any, Literal

from ..model.fabric import FabricSpec
from ..model.ha import ha_groups
from ..model.index import Index
from .design import RATIOS
from .endpoints import rail_ports
from .graph import FabricGraph, build_graph, components, worst_hops

CAP = 20  # findings shown per rule; the rest are summed up in one more


@dataclass(frozen=True, slots=True)
class PlanFinding:
    rule: str
    severity: Literal["error", "warning"]
    subject: str
    message: str


@dataclass(frozen=True)
class PlanReport:
    tiers: int
    switches: dict[str, int]
    cables: dict[str, int]
    media: dict[str, int]
    trunks: int
    patch_panels: int
    links_on_trunks: int
    oversubscription: str
    worst_leaf_ratio: float | None
    node_gbps: float
    bisection_gbps: float
    max_switch_hops: int | None
    free_ports: dict[str, int]
    findings: tuple[PlanFinding, ...]
    planes: int = 1  # rail planes (connected fabrics with nodes)
    bisection_across_planes_gbps: float = 0.0  # 0 with two or more planes: cross-plane traffic stays in the node

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["findings"] = [asdict(f) for f in self.findings]
        out["ok"] = self.ok
        return out


class _Findings:
    def __init__(self) -> None:
        self.items: list[PlanFinding] = []
        self.shown: Counter[str] = Counter()
        self.extra: Counter[str] = Counter()
        self.severity: dict[str, Literal["error", "warning"]] = {}

    def add(self, rule: str, severity: Literal["error", "warning"], subject: str, message: str) -> None:
        self.severity[rule] = severity
        if self.shown[rule] >= CAP:
            self.extra[rule] += 1
            return
        self.shown[rule] += 1
        self.items.append(PlanFinding(rule, severity, subject, message))

    def done(self) -> tuple[PlanFinding, ...]:
        more = [PlanFinding(r, self.severity[r], "...", f"and {n} more like these") for r, n in self.extra.items()]
        return (*self.items, *more)


def ratio_text(value: float | None) -> str:
    if value is None:
        return "n/a"
    if abs(value - round(value)) < 1e-9:
        return f"{round(value)}:1"
    return f"{value:.2f}:1"


def check_plan(index: Index, spec: FabricSpec | None = None) -> PlanReport:
    """Shape, rails and metrics of the fabric declared in `index` (spec: the default is the inventory's)."""
    spec = spec if spec is not None else index.inv.fabric
    g = build_graph(index)
    out = _Findings()
    for cid, why in g.odd:
        out.add("FT-TIER", "error", cid, f"cable {why}: a fat-tree links adjacent tiers only")
    pods = _pods(g, out)
    planes = _planes(g, pods, out)
    rail_opt = spec.kind == "rail-optimized" if spec else any(s.rail is not None for s in index.inv.switches)
    if rail_opt:
        _rails(index, g, out, set(spec.infra_roles) if spec else set())
    ratios = {leaf: g.down_gbps[leaf] / g.up_gbps[leaf] for leaf in g.of_role("leaf") if g.up_gbps[leaf] > 0}
    worst = max(ratios.values(), default=None)
    if spec is not None and worst is not None:
        asked = RATIOS[spec.oversubscription]
        for leaf, value in sorted(ratios.items()):
            if value > asked + 1e-9:
                out.add("OVERSUB", "error", leaf, f"{g.down_gbps[leaf]:g} Gb/s of nodes over "
                        f"{g.up_gbps[leaf]:g} Gb/s of uplinks = {ratio_text(value)}, more than the "
                        f"{spec.oversubscription} asked")
    _ha_shared(index, out)
    rpp = _rails_per_plane(spec)
    if rpp:
        hops, unreachable = _rail_planes(index, g, pods, rpp, out)
    else:
        hops, unreachable = worst_hops(g)
    if unreachable:
        out.add("FT-DISCONNECTED", "error", unreachable[0],
                f"{len(unreachable)} leaf/leaves with nodes cannot be reached from the rest of the fabric")
    node_gbps = g.tier_gbps["node_leaf"]
    narrow = [node_gbps]
    if len({leaf for *_, leaf in g.host_leaf}) >= 2:
        narrow.append(g.tier_gbps["leaf_spine"])
    if len(pods) >= 2 and not rpp:  # rail planes: the pods are the planes (their sum is the bisection within)
        narrow.append(g.tier_gbps["spine_core"])
    inv = index.inv
    leaves_with_nodes = {leaf for *_, leaf in g.host_leaf}
    n_planes = sum(1 for pod in pods if leaves_with_nodes & set(pod)) if rpp else 1
    return PlanReport(
        tiers=3 if planes else 2 if pods else 1,
        switches={role: sum(1 for r in g.roles.values() if r == role) for role in ("leaf", "spine", "core")},
        cables={name: g.cables.get(key, 0) for name, key in
                (("node_leaf", "node_leaf"), ("leaf_spine", "leaf_spine"), ("spine_core", "spine_core"))},
        media=dict(sorted(Counter(c.media for c in inv.cables).items())),
        trunks=len(inv.trunks), patch_panels=len(inv.patch_panels),
        links_on_trunks=sum(1 for c in inv.cables if c.trunk is not None),
        oversubscription=ratio_text(worst), worst_leaf_ratio=worst, node_gbps=node_gbps,
        bisection_gbps=min(narrow) / 2, max_switch_hops=hops,
        free_ports={name: max(0, g.radix[name] - len(g.used.get(name, ()))) for name in sorted(g.roles)},
        findings=out.done(), planes=n_planes,
        bisection_across_planes_gbps=min(narrow) / 2 if n_planes <= 1 else 0.0,
    )


def _uneven(out: _Findings, members: list[str], lower_role: str, upper_role: str, g: FabricGraph,
            what: str) -> None:
    lower = [m for m in members if g.roles.get(m) == lower_role]
    upper = [m for m in members if g.roles.get(m) == upper_role]
    counts = Counter(g.links.get((lo, up), 0) for lo in lower for up in upper)
    expected = max((c for c in counts if c), key=lambda c: (counts[c], c), default=0)
    for lo in lower:
        bad = [(up, g.links.get((lo, up), 0)) for up in upper if g.links.get((lo, up), 0) != expected]
        if bad:
            shown = ", ".join(f"{up} x{n}" for up, n in bad[:4]) + (", ..." if len(bad) > 4 else "")
            out.add("FT-UNEVEN", "error", lo, f"links to the {upper_role}s of its {what} are uneven ({shown}); "
                    f"expected {expected} to each of its {len(upper)} {upper_role}s")


def _pods(g: FabricGraph, out: _Findings) -> list[list[str]]:
    edges = [(lo, up) for lo, up in g.links if g.roles[lo] == "leaf"]
    pods = components(edges)
    for pod in pods:
        _uneven(out, pod, "leaf", "spine", g, "pod")
    in_pod = {x for pod in pods for x in pod}
    if g.of_role("spine"):
        for leaf in sorted({leaf for *_, leaf in g.host_leaf} - in_pod):
            out.add("FT-NO-UPLINK", "error", leaf, "leaf with nodes has no link to any spine")
    for spine in sorted(set(g.of_role("spine")) - in_pod):
        out.add("FT-IDLE", "warning", spine, "spine has no link from any leaf")
    with_nodes = {leaf for *_, leaf in g.host_leaf}
    for leaf in sorted(x for x in in_pod if g.roles.get(x) == "leaf" and x not in with_nodes):
        ups = sum(n for (lo, _), n in g.links.items() if lo == leaf)
        out.add("FT-EMPTY-LEAF", "warning", leaf, f"leaf has {ups} uplink(s) and no node port: a switch and its "
                "uplinks that carry nothing")
    return pods


def _planes(g: FabricGraph, pods: list[list[str]], out: _Findings) -> list[list[str]]:
    edges = [(lo, up) for lo, up in g.links if g.roles[lo] == "spine"]
    if not edges:
        return []
    planes = components(edges)
    for core in sorted(set(g.of_role("core")) - {x for plane in planes for x in plane}):
        out.add("FT-IDLE", "warning", core, "core has no link from any spine")
    plane_of: dict[str, int] = {}
    for i, plane in enumerate(planes):
        _uneven(out, plane, "spine", "core", g, "core plane")
        plane_of.update((x, i) for x in plane)
    for pod in pods:
        spines = [x for x in pod if g.roles[x] == "spine"]
        for spine in spines:
            if spine not in plane_of:
                out.add("FT-NO-UPLINK", "error", spine, "spine has no link to any core")
        per_plane = Counter(plane_of[s] for s in spines if s in plane_of)
        if per_plane and (len(per_plane) != len(planes) or len(set(per_plane.values())) > 1):
            out.add("FT-UNEVEN", "error", pod[0], f"the pod of {pod[0]} reaches {len(per_plane)} of "
                    f"{len(planes)} core planes through {sorted(set(per_plane.values()))} spine(s) each")
    return planes


def _rails_per_plane(spec: FabricSpec | None) -> int:
    return (spec.rails_per_plane or 0) if spec is not None else 0


def _rail_planes(index: Index, g: FabricGraph, pods: list[list[str]], rpp: int,
                 out: _Findings) -> tuple[int | None, list[str]]:
    """Rail planes (fabric.planes): every connected fabric (a 2-tier pod) is one plane and serves the
    rails of that plane only. PLANE-MIXED: an HCA port on a leaf of another plane's fabric (a cable
    plugged into the wrong plane); PLANE-SPLIT: one plane's leaves in two fabrics. Returns the worst
    hops within a plane and the leaves a plane's other leaves cannot reach."""
    pod_of = {x: i for i, pod in enumerate(pods) for x in pod}
    rail_cache: dict[int, dict[tuple[str, int], int]] = {}
    by_pod: dict[int, Counter[int]] = defaultdict(Counter)
    ports: list[tuple[str, str, int, str, int]] = []
    for node, hca, port, leaf in g.host_leaf:
        hw = index.hardware.get(node)
        if hw is None:
            continue
        rails = rail_cache.get(id(hw))
        if rails is None:
            rails = rail_cache[id(hw)] = {(ep.hca, ep.port): r for r, ep in rail_ports(hw)}
        rail = rails.get((hca, port))
        if rail is None:
            continue
        ports.append((node, hca, port, leaf, rail))
        by_pod[pod_of.get(leaf, -1)][rail // rpp] += 1
    plane_of_pod = {i: c.most_common(1)[0][0] for i, c in by_pod.items() if i >= 0}
    for node, hca, port, leaf, rail in ports:
        pod = pod_of.get(leaf, -1)
        if pod in plane_of_pod and plane_of_pod[pod] != rail // rpp:
            out.add("PLANE-MIXED", "error", f"{node}/{hca}/{port}",
                    f"rail {rail} HCA reaches plane {plane_of_pod[pod]}'s leaf {leaf} (rail {rail} belongs to "
                    f"plane {rail // rpp}): the cable is plugged into the wrong plane")
    homes: dict[int, list[int]] = defaultdict(list)
    for pod, plane in sorted(plane_of_pod.items()):
        homes[plane].append(pod)
    unreachable: list[str] = []
    worst: int | None = None
    for plane, members in sorted(homes.items()):
        if len(members) > 1:
            out.add("PLANE-SPLIT", "error", pods[members[1]][0],
                    f"plane {plane} is {len(members)} fabrics that cannot reach each other")
        for pod in members:
            keep = set(pods[pod])
            sub = FabricGraph(roles={x: r for x, r in g.roles.items() if x in keep},
                              links={k: v for k, v in g.links.items() if k[0] in keep},
                              host_leaf=[h for h in g.host_leaf if h[3] in keep])
            hops, missing = worst_hops(sub)
            unreachable.extend(missing)
            if hops is not None:
                worst = max(worst or 0, hops)
    lonely = sorted({leaf for *_, leaf in g.host_leaf if leaf not in pod_of})
    if len(lonely) > 1 or (lonely and pods):
        unreachable.extend(lonely)
    return worst, unreachable


def _rails(index: Index, g: FabricGraph, out: _Findings, infra_roles: set[str]) -> None:
    """Rail rules over the nodes on rail leaves (infrastructure nodes have leaves of their own)."""
    rail_cache: dict[int, dict[tuple[str, int], int]] = {}
    leaf_rails: dict[str, set[int]] = defaultdict(set)
    node_leaves: dict[str, set[str]] = defaultdict(set)
    nodes = index.nodes
    for node, hca, port, leaf in g.host_leaf:
        hw = index.hardware.get(node)
        if hw is None or (node in nodes and nodes[node].role in infra_roles):
            continue
        rails = rail_cache.get(id(hw))
        if rails is None:
            rails = rail_cache[id(hw)] = {(ep.hca, ep.port): r for r, ep in rail_ports(hw)}
        rail = rails.get((hca, port))
        if rail is not None:
            leaf_rails[leaf].add(rail)
        node_leaves[node].add(leaf)
    switches = index.switches
    for leaf, served in sorted(leaf_rails.items()):
        if len(served) > 1:
            out.add("RAIL-MIXED", "error", leaf, f"serves rails {sorted(served)}: a rail-optimized leaf serves one")
        label = switches[leaf].rail
        if label is not None and served != {label}:
            out.add("RAIL-LABEL", "warning", leaf, f"is declared rail {label} but serves rail(s) {sorted(served)}")
    for node, leaves in sorted(node_leaves.items()):
        groups = {switches[leaf].group for leaf in leaves}
        if len(groups) > 1 and None not in groups:
            out.add("RAIL-SU", "warning", node, f"reaches leaves of scalable units {sorted(groups)}")  # type: ignore[type-var]


def _ha_shared(index: Index, out: _Findings) -> None:
    """HA group members whose node links share an MPO trunk or a patch panel."""
    groups = ha_groups(index.inv)
    if not groups or not index.inv.trunks:
        return
    members = {m for grp in groups for m in grp.members}
    trunks = index.trunks
    uses: dict[str, set[str]] = defaultdict(set)
    for c in index.inv.cables:
        if c.trunk is None:
            continue
        for ref in (c.a, c.b):
            if ref.hca is not None and ref.device in members:
                t = trunks.get(c.trunk)
                uses[ref.device].update((f"trunk {c.trunk}", *((f"panel {t.a_panel}", f"panel {t.b_panel}")
                                                              if t is not None else ())))
    for grp in groups:
        for i, a in enumerate(grp.members):
            for b in grp.members[i + 1:]:
                shared = sorted(uses[a] & uses[b])
                if shared:
                    out.add("HA-SHARED", "warning", grp.label, f"{a} and {b} share {', '.join(shared[:3])}"
                            + (", ..." if len(shared) > 3 else "") + ": one trunk or panel fault takes both off "
                            "the fabric")
