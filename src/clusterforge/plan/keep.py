"""What of the frozen fabric a re-plan keeps (frozen.py has the rules): switch places, link ports,
cable runs, trunks and lane groups, decided before anything new is placed or cabled, so that new
elements only ever take what is free. A mixin of the generator's builder (generate.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..catalog import Catalog
from ..model.cabling import Cable
from ..model.nodes import Switch
from .design import Design, SwitchType
from .endpoints import Endpoint, FabricNode
from .frozen import Frozen
from .media import MediaPicker
from .placement import Floor
from .slots import Units
from .trunks import MPO_FIBERS, TrunkPacker


@dataclass(frozen=True, slots=True)
class Sw:
    """A switch of the design before it is placed."""

    name: str
    role: str
    st: SwitchType
    group: int | None
    rail: int | None
    pod: int = -1  # leaves and spines: their pod; cores: -1
    plane: int = -1  # spines: their index in the pod (= core plane); cores: their plane


@dataclass(frozen=True, slots=True)
class Unit:
    """One unit position: its leaves (index in the unit -> name) and, for SUs, its nodes by slot."""

    pos: int
    in_pod: int
    leaves: dict[int, str]
    members: tuple[tuple[int, FabricNode], ...]  # (k, node), k order; infrastructure units: ()
    infra: bool


class KeepFrozen:
    """The builder's first phase against a frozen fabric (the attributes are the builder's)."""

    d: Design
    floor: Floor
    cat: Catalog
    picker: MediaPicker
    packer: TrunkPacker
    frozen: Frozen
    partners: Mapping[str, frozenset[str]]
    loc: dict[str, tuple[str, int]]
    rate_ls: str
    rate_sc: str
    kept_sw: dict[str, Switch]
    kept_pairs: dict[tuple[str, str], list[tuple[int, int, Cable]]]
    kept_hosts: dict[tuple[str, str | None, int], Cable]
    kept_run: set[str]
    used: dict[str, set[int]]
    ids: set[str]
    ha_used: dict[str, set[str]]  # HA member -> trunks and panels its links use

    def _keep_frozen(self, sws: list[Sw], units: list[Unit], compute: list[FabricNode],
                     infra: list[FabricNode], spread: list[list[tuple[int, int]]]) -> None:
        d, fz, floor = self.d, self.frozen, self.floor
        by_name = {s.name: s for s in sws}
        for s in sws:
            f = fz.switches.get(s.name)
            if (f is not None and f.model == s.st.model and f.role == s.role and f.split == s.st.split
                    and floor.free_at(f.rack, f.u, s.st.ru)):
                floor.keep(f.rack, f.u, s.st.ru, s.st.power_w)
                self.kept_sw[s.name] = f
                self.loc[s.name] = (f.rack, f.u)
        # switch-to-switch links: both switches in the design, the pair linked, ports in range
        spine_ports = d.spine_down if d.tiers == 3 else d.spine.ports
        for (lo, up), links in fz.switch_links.items():
            a, b = by_name.get(lo), by_name.get(up)
            if a is None or b is None:
                continue
            if (a.role == "leaf" and b.role == "spine" and a.pod == b.pod
                    and (not d.rails_per_plane or (a.rail is not None and d.plane_of(a.rail) == b.plane))):
                # any port above the node ports: links kept after an oversubscription change stay put
                want, lo_rng, up_rng = d.leaf_spine_links, (d.leaf_down + 1, d.leaf.ports), (1, spine_ports)
            elif a.role == "spine" and b.role == "core" and a.plane == b.plane and d.core is not None:
                want, lo_rng, up_rng = d.spine_core_links, (d.spine_down + 1, d.spine.ports), (1, d.core.ports)
            else:
                continue
            ua, ub = self.used.setdefault(lo, set()), self.used.setdefault(up, set())
            kept: list[tuple[int, int, Cable]] = []
            for lp, upp, c in links:
                if (len(kept) < want and lo_rng[0] <= lp <= lo_rng[1] and up_rng[0] <= upp <= up_rng[1]
                        and lp not in ua and upp not in ub):
                    ua.add(lp)
                    ub.add(upp)
                    kept.append((lp, upp, c))
            if kept:
                self.kept_pairs[(lo, up)] = kept
        # node links: the port the node's slot (or spread) gives is the frozen one
        geo = Units(d, {})
        for unit in units:
            for k, node in unit.members:
                for rail, ep in enumerate(node.ports):
                    if ep is not None:
                        i, port = geo.leaf_port(k, rail)
                        self._keep_host(node, ep, unit.leaves[i], port)
        for node, ports in zip(infra, spread, strict=True):
            for ep, (leaf_no, port) in zip(node.ports, ports, strict=True):
                if ep is not None:
                    self._keep_host(node, ep, f"leaf-infra-{leaf_no + 1:02d}", port)
        self.ids = {c.id for links in self.kept_pairs.values() for *_, c in links}
        self.ids.update(c.id for c in self.kept_hosts.values())
        self._keep_runs(compute, infra, by_name)

    def _keep_host(self, node: FabricNode, ep: Endpoint, leaf: str, port: int) -> None:
        hit = self.frozen.host_cable.get((node.name, ep.hca, ep.port))
        if hit is not None and hit[1] == leaf and hit[2] == port:
            self.kept_hosts[(node.name, ep.hca, ep.port)] = hit[0]

    def _keep_runs(self, compute: list[FabricNode], infra: list[FabricNode], sws: dict[str, Sw]) -> None:
        """Kept links whose run is unchanged keep medium, length, trunk and lane (reserved here, before
        any new link takes a lane)."""
        fz, floor = self.frozen, self.floor
        self.packer.retired = {*fz.trunks, *fz.panels}
        nodes = {n.name: n for n in (*compute, *infra)}
        panel_ok: dict[str, bool | None] = {}  # None: valid and kept already
        seen: set[tuple[str, int]] = set()
        for p in fz.panels.values():
            spot = (p.rack, p.u)
            panel_ok[p.name] = spot not in seen and floor.free_at(p.rack, p.u, 1)
            seen.add(spot)
        kept = {c.id for c in self.kept_hosts.values()}
        kept.update(c.id for links in self.kept_pairs.values() for *_, c in links)
        lanes: dict[str, list[int]] = {}
        trunk_end: dict[str, tuple[str, str, str]] = {}
        taken: set[tuple[str, int]] = set()
        guess: dict[str, str] = {}  # trunk -> the rate of a link it carried (for trunks left empty)
        host_rate = self.cat.slower(self.d.rate, self.d.leaf.rate) or self.d.leaf.rate
        for c in fz.cables:
            if c.trunk is not None and c.trunk not in guess:
                roles = {fz.switches[x].role for x in (c.a.device, c.b.device) if x in fz.switches}
                guess[c.trunk] = (self.rate_sc if "core" in roles else host_rate
                                  if c.a.hca is not None or c.b.hca is not None else self.rate_ls)
            if c.id not in kept:
                continue
            host, sw = (c.a, c.b) if c.a.hca is not None else (c.b, c.a) if c.b.hca is not None else (None, None)
            if host is not None and sw is not None:
                node = nodes[host.device]
                if sw.device not in self.loc:
                    continue
                ep_rate = next((ep.rate for ep in node.ports if ep is not None and ep.hca == host.hca
                                and ep.port == host.port), self.d.leaf.rate)
                rate = self.cat.slower(ep_rate, self.d.leaf.rate) or self.d.leaf.rate
                (ra, ua), (rb, ub) = (node.rack, node.u), self.loc[sw.device]
                on_trunk, who = not node.infra, node.name
            else:
                if c.a.device not in self.loc or c.b.device not in self.loc:
                    continue
                (ra, ua), (rb, ub) = self.loc[c.a.device], self.loc[c.b.device]
                rate = self.rate_sc if "core" in (sws[c.a.device].role, sws[c.b.device].role) else self.rate_ls
                on_trunk, who = True, ""
            run = self.picker.pick(ra, ua, rb, ub, rate, on_trunk)
            if run.media != c.media or run.length_m != c.length_m or run.trunked != (c.trunk is not None):
                continue
            if not run.trunked:
                if run.fiber_type == c.fiber_type:
                    self.kept_run.add(c.id)
                continue
            t = fz.trunks.get(c.trunk or "")
            if t is None or c.lane_group is None or (t.id, c.lane_group) in taken:
                continue
            pa, pb = fz.panels.get(t.a_panel), fz.panels.get(t.b_panel)
            if (pa is None or pb is None or panel_ok[pa.name] is False or panel_ok[pb.name] is False
                    or {pa.rack, pb.rack} != {ra, rb}):
                continue
            fiber = self.packer.fiber_of(ra, rb, rate)
            per = MPO_FIBERS // (self.cat.media["fiber"].fibers_per_link or {}).get(rate, 8)
            if t.fiber_type != fiber or c.fiber_type != fiber or c.lane_group >= per:
                continue
            if t.id in trunk_end and trunk_end[t.id][2] != rate:
                continue
            if who in self.partners:
                avoid = self._avoid(who)
                if t.id in avoid or pa.name in avoid or pb.name in avoid:
                    continue
                self.ha_used.setdefault(who, set()).update((t.id, pa.name, pb.name))
            taken.add((t.id, c.lane_group))
            lanes.setdefault(t.id, []).append(c.lane_group)
            trunk_end.setdefault(t.id, (ra, rb, rate))
            self.kept_run.add(c.id)
        # trunks with kept lanes, and (for new links to fill first) valid trunks left empty: the packer
        # drops those still empty after the build
        for t in fz.trunks.values():
            pa, pb = fz.panels.get(t.a_panel), fz.panels.get(t.b_panel)
            if t.id in lanes:
                ra, rb, rate = trunk_end[t.id]
            elif (pa is not None and pb is not None and panel_ok.get(pa.name) is not False
                  and panel_ok.get(pb.name) is not False and pa.rack != pb.rack and t.id in guess
                  and t.fiber_type == self.packer.fiber_of(pa.rack, pb.rack, guess[t.id])):
                ra, rb, rate = pa.rack, pb.rack, guess[t.id]
            else:
                continue
            assert pa is not None and pb is not None
            for p in (pa, pb):
                if panel_ok.get(p.name):
                    floor.keep(p.rack, p.u, 1, switch=False)
                    panel_ok[p.name] = None
            self.packer.reserve(t, ra, rb, rate, lanes.get(t.id, []), (pa, pb))

    def _avoid(self, node: str) -> set[str]:
        out: set[str] = set()
        for other in self.partners.get(node, ()):
            out |= self.ha_used.get(other, set())
        return out
