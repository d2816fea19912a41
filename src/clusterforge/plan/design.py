"""Fabric arithmetic: from a FabricSpec and a node count to the numbers of a folded Clos.

Everything here is integer arithmetic on port counts; nothing is placed or cabled yet.
The rules (also in docs/planner.md):

* A scalable unit (SU) is `su_size` consecutive fabric nodes and owns `rails` leaves.
  Every leaf keeps `su_size` down ports (one per node of its SU) and `su_size / r`
  up ports for an `r:1` oversubscription; both must fit the leaf's radix.
  Default su_size: the largest that fits with an even number of uplinks.
* Spines and cores are sized for `max_sus` SUs (default: the SUs the nodes fill now).
* 2 tiers: S spines, every leaf has p = uplinks / S links to every spine. S is
  `fabric.spines` or the fewest spines (at least 2) that divide the uplinks evenly and
  whose ports hold every leaf: leaves x p <= spine radix.
* 3 tiers: pods of m SUs; each pod has S spines (default: one per leaf uplink, p = 1)
  whose ports split half down (m x rails x p leaf links) and half up. Spine j of every
  pod belongs to core plane j; a plane has C cores and every spine links to every core
  of its plane q times, C x q = spine uplinks. C is the fewest cores that divide the
  spine uplinks evenly and whose ports hold every pod: pods x q <= core radix.
* tiers auto: 2 when the leaves fit one layer of spines (leaves <= spine radix), else 3.
* Infrastructure leaves (`fabric.infra_roles`): `infra_leaves` leaves (default: the fewest
  whose `su_size` down ports hold the infrastructure ports, at least two for two ports or
  more) take the first ceil(infra_leaves / rails) unit positions, ahead of the scalable
  units, with the same uplinks as every leaf: the Clos stays uniform, and scalable units
  added later land after them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..catalog import Catalog
from ..model.fabric import FabricSpec
from .errors import PlanError

RATIOS: dict[str, int] = {"1:1": 1, "2:1": 2, "3:1": 3, "4:1": 4}


@dataclass(frozen=True, slots=True)
class SwitchType:
    """A catalog switch as the planner uses it: logical ports at one rate."""

    model: str
    ports: int  # logical ports (split: physical ports x ways)
    rate: str
    split: bool
    ru: int
    power_w: float


@dataclass(frozen=True, slots=True)
class Design:
    kind: str
    tiers: int
    rate: str  # host link rate (fabric.rate)
    leaf: SwitchType
    spine: SwitchType
    core: SwitchType | None
    rails: int
    ratio: int  # leaf down:up = ratio:1
    su_size: int
    uplinks: int  # per leaf
    sus: int  # unit positions filled now: infrastructure units + the scalable units the nodes fill
    design_sus: int  # unit positions the upper tiers are sized for (infrastructure units included)
    sus_per_pod: int  # 2 tiers: design_sus (one pod)
    spines_per_pod: int
    leaf_spine_links: int  # p: links from each leaf to each spine of its pod
    cores_per_plane: int  # 0 in 2 tiers
    spine_core_links: int  # q: links from each spine to each core of its plane
    infra_sus: int = 0  # unit positions (first ones) that hold the infrastructure leaves
    infra_leaves: int = 0
    leaves_per_rail: int = 1  # L: a unit's nodes spread over L leaves of each rail
    rails_per_plane: int = 0  # rail planes: rails of each plane (0: one fabric)

    @property
    def leaf_down(self) -> int:
        """Node ports of a leaf (su_size / leaves_per_rail); its up ports follow."""
        return self.su_size // self.leaves_per_rail

    @property
    def unit_leaves(self) -> int:
        """Leaves of a full unit position: rails x leaves_per_rail."""
        return self.rails * self.leaves_per_rail

    @property
    def planes(self) -> int:
        """Rail planes (1: one fabric)."""
        return self.rails // self.rails_per_plane if self.rails_per_plane else 1

    @property
    def plane_unit_leaves(self) -> int:
        """Leaves a unit puts into each plane (its position block on the plane's spines)."""
        return (self.rails_per_plane or self.rails) * self.leaves_per_rail

    def plane_of(self, rail: int) -> int:
        return rail // self.rails_per_plane if self.rails_per_plane else 0

    @property
    def compute_sus(self) -> int:
        """Scalable units of rail leaves the nodes fill now."""
        return self.sus - self.infra_sus

    @property
    def oversubscription(self) -> str:
        return f"{self.ratio}:1"

    @property
    def leaves_per_pod(self) -> int:
        """Leaves on one spine's down ports (rail planes: of one plane)."""
        return self.sus_per_pod * self.plane_unit_leaves

    @property
    def spine_down(self) -> int:
        """Spine ports reserved for leaves (the rest of a 3-tier spine's up ports follow)."""
        return self.leaves_per_pod * self.leaf_spine_links

    @property
    def pods(self) -> int:
        return math.ceil(self.sus / self.sus_per_pod)

    @property
    def leaves(self) -> int:
        return self.compute_sus * self.unit_leaves + self.infra_leaves

    @property
    def spines(self) -> int:
        return self.pods * self.spines_per_pod * self.planes

    @property
    def cores(self) -> int:
        return self.spines_per_pod * self.cores_per_plane if self.tiers == 3 else 0


def one_layer_leaves(d: Design) -> int | None:
    """The leaves the design is sized for (every plane's, infrastructure leaves included) when one layer
    of its spines could connect them all, else None: rail planes are needed only once the leaves
    outnumber a spine's ports; below that one set of spines serves every leaf."""
    leaves = d.design_sus * d.unit_leaves + d.infra_leaves
    return leaves if leaves <= d.spine.ports else None


def switch_type(cat: Catalog, model: str, split: bool, field: str) -> SwitchType:
    info = cat.switches.get(model)
    if info is None:
        raise PlanError(f"fabric.{field}: unknown switch model {model!r}",
                        [f"{field}: {m}" for m in sorted(cat.switches)])
    if split:
        if info.split is None:
            splittable = sorted(m for m, s in cat.switches.items() if s.split is not None)
            raise PlanError(f"fabric.split: {model} ports cannot be split",
                            ["split: false", *(f"{field}: {m}" for m in splittable)])
        return SwitchType(model, info.ports * info.split.ways, info.split.rate, True, info.ru, info.power_w)
    return SwitchType(model, info.ports, info.rate, False, info.ru, info.power_w)


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _valid_su(su: int, ratio: int, ports: int) -> bool:
    return su >= 1 and su % ratio == 0 and su + su // ratio <= ports


def default_su_size(ports: int, ratio: int) -> int:
    """The largest su_size a leaf holds at `ratio`, preferring an even number of uplinks."""
    valid = [s for s in range(ports, 0, -1) if _valid_su(s, ratio, ports)]
    if not valid:
        raise PlanError(f"a {ports}-port leaf cannot give any node an uplink at {ratio}:1")
    even = [s for s in valid if (s // ratio) % 2 == 0]
    return even[0] if even else valid[0]


def _nearest(values: list[int], target: int) -> list[int]:
    below = [v for v in values if v < target]
    above = [v for v in values if v > target]
    return ([max(below)] if below else []) + ([min(above)] if above else [])


def resolve(spec: FabricSpec, cat: Catalog, nodes: int, rails: int, infra_ports: int = 0, *,
            units: int = 0, spines_hint: int | None = None, cores_hint: int | None = None,
            links_hint: int | None = None) -> Design:
    """The design for `nodes` fabric nodes with `rails` ports each (plus `infra_ports` ports of
    infrastructure nodes on their own leaves), or PlanError.

    `units`: scalable units in use at least (a re-plan keeps nodes in their units, so retired
    nodes can leave holes and HA partners can open a unit). `spines_hint` / `cores_hint`: the
    spines per pod / cores per plane of the frozen fabric, kept when the spec does not set
    `spines` and they still fit (so that retiring a unit does not re-cable the upper tiers).
    `links_hint`: the frozen links per leaf and spine; with it, a change of the uplinks per leaf
    (oversubscription) takes a spine count that only adds or only removes (`_replan_count`)."""
    ratio = RATIOS[spec.oversubscription]
    leaf = switch_type(cat, spec.leaf_model, spec.split, "leaf_model")
    spine = switch_type(cat, spec.spine_model or spec.leaf_model, spec.split, "spine_model")
    su, per_rail = _unit_size(spec, leaf, ratio, cat)
    down = su // per_rail
    up = down // ratio
    rpp = _rails_per_plane(spec, rails)
    if rpp and infra_ports:
        raise PlanError("fabric.infra_roles with rail planes: infrastructure leaves would join one plane only",
                        ["leave infra_roles empty (the nodes take unit slots on the rail leaves of every plane)",
                         "planes: null"], field=("infra_roles",))
    infra_leaves = _infra_leaves(spec, down, infra_ports)
    infra_sus = math.ceil(infra_leaves / (rails * per_rail))
    sus = max(math.ceil(nodes / su) if nodes or infra_ports else 1, units)
    if spec.max_sus is not None and spec.max_sus < sus:
        why = (f"{nodes} nodes fill" if units <= math.ceil(nodes / su) else
               f"{nodes} nodes, kept in their units and HA partners apart, fill")
        raise PlanError(f"{why} {sus} scalable units of {su}, more than fabric.max_sus "
                        f"{spec.max_sus}", [f"max_sus: {sus}"])
    design_sus = infra_sus + (spec.max_sus or sus)
    sus += infra_sus
    tiers = spec.tiers
    if rpp:
        if tiers == 3:
            raise PlanError("rail planes are two-tier Clos networks: fabric.tiers 3 with planes",
                            ["tiers: 2 (or auto)", "planes: null (one three-tier fabric)"], field=("tiers",))
        tiers = 2
    if tiers == "auto":
        tiers = 2 if design_sus * rails * per_rail <= spine.ports else 3
    if tiers == 2:
        d = _two_tier(spec, leaf, spine, (rpp or rails) * per_rail, ratio, su, up, sus, design_sus, spines_hint,
                      rails, rpp, links_hint)
    else:
        core = switch_type(cat, spec.core_model or spec.spine_model or spec.leaf_model, spec.split, "core_model")
        d = _three_tier(spec, leaf, spine, core, rails * per_rail, ratio, su, up, sus, design_sus, spines_hint,
                        cores_hint, links_hint)
    d = replace(d, rails=rails, leaves_per_rail=per_rail, rails_per_plane=rpp) if per_rail > 1 or rpp else d
    return replace(d, infra_sus=infra_sus, infra_leaves=infra_leaves) if infra_leaves else d


def _unit_size(spec: FabricSpec, leaf: SwitchType, ratio: int, cat: Catalog) -> tuple[int, int]:
    """(su_size, leaves per rail), or PlanError. A unit wider than a leaf's down ports takes the
    fewest leaves per rail that split it evenly into valid leaves (or `leaves_per_rail`)."""
    per_rail = spec.leaves_per_rail
    su = spec.su_size or default_su_size(leaf.ports, ratio) * (per_rail or 1)
    if per_rail is None:
        # the fewest leaves per rail = the most nodes per leaf: tried from a leaf's ports down, so the work is
        # bounded by the radix, not by su_size (a trial over the divisors of 10^12 never ended)
        per_leaf = next((q for q in range(min(su, leaf.ports), 0, -1)
                         if su % q == 0 and _valid_su(q, ratio, leaf.ports)), None)
        per_rail = 1 if per_leaf is None else su // per_leaf  # none: say why for one leaf per rail
    elif su % per_rail:
        top = min(su * 2, per_rail * (leaf.ports + 1))  # past it no leaf holds s // per_rail nodes
        ok = [s for s in range(per_rail, top, per_rail) if _valid_su(s // per_rail, ratio, leaf.ports)]
        raise PlanError(f"su_size {su} does not split evenly over leaves_per_rail {per_rail}",
                        [f"su_size: {s}" for s in _nearest(ok, su)])
    down = su // per_rail
    if down % ratio:
        ok = [s for s in range(1, leaf.ports + 1) if _valid_su(s, ratio, leaf.ports)]
        raise PlanError(
            f"su_size {su} does not divide by {ratio}: at {spec.oversubscription} every leaf needs "
            + (f"su_size/{ratio} uplinks, and {su}/{ratio}" if per_rail == 1 else
               f"its {down} node ports/{ratio} uplinks, and {down}/{ratio}") + " is not a whole number of ports",
            [f"su_size: {s * per_rail} ({s // ratio} uplinks per leaf)" for s in _nearest(ok, down)])
    up = down // ratio
    if down + up > leaf.ports:
        best = default_su_size(leaf.ports, ratio)
        raise PlanError(
            f"su_size {su} at {spec.oversubscription} needs {down} down + {up} up = {down + up} ports per "
            f"leaf{f' ({per_rail} leaves per rail)' if per_rail > 1 else ''}; {leaf.model} has {leaf.ports}"
            f"{' split' if leaf.split else ''} ports",
            [f"su_size: {best} ({best} down + {best // ratio} up)",
             f"leaves_per_rail: {math.ceil(su / best)}",
             *([] if leaf.split else _split_hint(cat, spec.leaf_model))])
    return su, per_rail


def _rails_per_plane(spec: FabricSpec, rails: int) -> int:
    """Rails of each rail plane (0: one fabric), or PlanError."""
    if spec.planes is None:
        return 0
    if spec.kind != "rail-optimized":
        raise PlanError("fabric.planes needs kind rail-optimized (a plane is a group of rails)",
                        ["kind: rail-optimized", "planes: null"], field=("planes",))
    rpp = spec.rails_per_plane or 1
    if rails % rpp:
        raise PlanError(f"planes: {rpp} rails per plane do not divide the {rails} rails evenly",
                        [f"planes: {n}" for n in divisors(rails)], field=("planes",))
    return rpp


def _infra_leaves(spec: FabricSpec, su: int, ports: int) -> int:
    """How many infrastructure leaves (0 without infrastructure ports), or PlanError."""
    if not ports:
        return 0
    need = math.ceil(ports / su)
    if spec.infra_leaves is None:
        return max(need, min(2, ports))
    if spec.infra_leaves < need:
        raise PlanError(f"{ports} infrastructure node ports need {need} leaves of {su} down ports; "
                        f"fabric.infra_leaves is {spec.infra_leaves}", [f"infra_leaves: {need}"])
    return spec.infra_leaves


def _split_hint(cat: Catalog, model: str) -> list[str]:
    info = cat.switches.get(model)
    return ["split: true (doubles the leaf's ports at half the rate)"] if info and info.split else []


def _two_tier(spec: FabricSpec, leaf: SwitchType, spine: SwitchType, rails: int, ratio: int, su: int,
              up: int, sus: int, design_sus: int, hint: int | None = None, all_rails: int = 0,
              rpp: int = 0, links_hint: int | None = None) -> Design:
    """`rails`: leaves a unit puts on one spine layer (rail planes: of one plane)."""
    leaves = design_sus * rails
    if leaves > spine.ports:
        most = spine.ports // rails
        where = f"one plane of {spine.ports}-port {spine.model} spines" if rpp else \
            f"one layer of {spine.ports}-port {spine.model} spines"
        raise PlanError(
            f"{design_sus} scalable units x {rails} "
            f"{'leaves per plane' if rpp else 'rails' if rails == all_rails else 'leaves'} = {leaves} leaves; "
            f"{where} connects at most {spine.ports} leaves ({most} units = {most * su} nodes) in 2 tiers",
            [*(["planes: rail (one two-tier plane per rail)"] if not rpp and all_rails > 1 else []),
             "tiers: 3 (or auto)" if not rpp else "planes: null (three tiers)",
             *([f"max_sus: {most}"] if spec.max_sus and most >= sus else [])])
    valid = [s for s in divisors(up) if leaves * (up // s) <= spine.ports]
    if spec.spines is not None:
        count = spec.spines
        if count not in valid:
            if up % count:
                why = f"{up} uplinks per leaf cannot be spread evenly over {count} spines"
            else:
                why = (f"{count} spines take {up // count} links from each of {leaves} leaves = "
                       f"{leaves * (up // count)} ports, more than the {spine.ports} of a {spine.model}")
            raise PlanError(why, [f"spines: {s} ({up // s} links from every leaf)" for s in _nearest(valid, count)])
    else:
        count = _replan_count(valid, next(s for s in valid if s >= min(2, up)), up, hint, links_hint)
    return Design(spec.kind, 2, spec.rate, leaf, spine, None, rails, ratio, su, up, sus, design_sus,
                  design_sus, count, up // count, 0, 0)


def _replan_count(valid: list[int], default: int, up: int, hint: int | None, links: int | None) -> int:
    """Spines (per pod) for `up` uplinks per leaf, of the `valid` counts, against a frozen fabric of
    `hint` spines with `links` links from each leaf to each (from scratch: `default`).

    A count whose spines and links per spine are both no fewer than the frozen ones, or both no
    more, so that the change only adds links (and spines) or only removes them and every kept link
    stays on its ports; of those the one nearest the from-scratch count, with at least two spines
    when there are two uplinks and such a count exists (else one spine: fewer uplinks than spines
    divide evenly, as 2 spines x 6 links -> 3 uplinks, remove one spine rather than re-patch every
    link). While the uplinks per leaf are the same that is the frozen count (the only one both
    ways); after an oversubscription change, 1:1 -> 2:1 on 4 spines x 4 links gives 2 x 4 (two
    spines go with their links), 4:1 -> 1:1 on 2 x 2 gives 4 x 4. Without such a count: the frozen
    one when it is valid, else the from-scratch one (links move)."""
    if hint is None:
        return default
    if links is not None:
        same_way = [s for s in valid if (s <= hint and up // s <= links) or (s >= hint and up // s >= links)]
        if same_way:
            return min(same_way, key=lambda s: (s < min(2, up), abs(s - default), s))
    return hint if hint in valid else default


def _three_tier(spec: FabricSpec, leaf: SwitchType, spine: SwitchType, core: SwitchType, rails: int,
                ratio: int, su: int, up: int, sus: int, design_sus: int, hint: int | None = None,
                cores_hint: int | None = None, links_hint: int | None = None) -> Design:
    half = spine.ports // 2
    fits = [s for s in divisors(up) if rails * (up // s) <= half]
    if spec.spines is not None:
        count = spec.spines
        if count not in fits:
            raise PlanError(
                f"{count} spines per pod do not work: {up} uplinks per leaf "
                + ("cannot be spread evenly over them" if up % count else
                   f"at {up // count} links each need {rails * (up // count)} ports per SU, more than "
                   f"the {half} down ports of a 3-tier {spine.model} spine"),
                [f"spines: {s}" for s in _nearest(fits, count)])
    else:
        count = _replan_count(fits, up, up, hint, links_hint)
    links = up // count
    per_pod = half // (rails * links)
    if per_pod == 0:
        raise PlanError(
            f"a pod must hold a whole scalable unit: {rails} rail leaves x {links} links = "
            f"{rails * links} spine ports, but a 3-tier {spine.model} spine has {half} down ports",
            [f"rails: {half} or fewer", f"spine_model with at least {2 * rails} ports"])
    pods = math.ceil(design_sus / per_pod)
    spine_up = per_pod * rails * links
    if pods > core.ports:
        most = core.ports * per_pod
        raise PlanError(
            f"{design_sus} scalable units make {pods} pods of {per_pod}; {core.ports}-port {core.model} "
            f"cores connect at most {core.ports} pods ({most} units = {most * su} nodes)",
            [f"max_sus: {most}", "a higher oversubscription or a larger core_model"])
    fit = [c for c in divisors(spine_up) if pods * (spine_up // c) <= core.ports]
    cores = cores_hint if cores_hint is not None and cores_hint in fit else fit[0]
    return Design(spec.kind, 3, spec.rate, leaf, spine, core, rails, ratio, su, up, sus, design_sus,
                  per_pod, count, links, cores, spine_up // cores)
