"""Re-planning against a frozen fabric over random spec edits: only what must change changes.

A synthetic floor is planned from scratch and frozen; then the spec is edited (oversubscription,
spines, max_sus, nodes retired from the middle or added at the end, infrastructure nodes added)
and planned again against the frozen fabric. Every surviving node keeps its cables (ends, ids,
runs, trunks, lanes), no surviving switch moves, every link whose two ends stay is the same
cable, surviving trunks keep their panels, the result passes every check, and re-planning the
result changes nothing. An oversubscription change moves no link: fewer uplinks per leaf only remove
links (and spines, trunks, panels), more only add them.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from clusterforge.catalog import catalog
from clusterforge.check import run_checks
from clusterforge.model import FabricSpec, Inventory
from clusterforge.model.index import Index
from clusterforge.model.services import LustreFs
from clusterforge.plan import Plan, PlanError, check_plan, plan_fabric
from clusterforge.plan.changes import changes
from clusterforge.plan.frozen import Frozen
from clusterforge.plan.synthetic import Shape, synthetic_inventory

CAT = catalog()
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Edit:
    before: Inventory
    after: Inventory
    what: str

    def __repr__(self) -> str:
        a = self.after
        return (f"Edit({self.what}: {len(self.before.nodes)} -> {len(a.nodes)} nodes "
                f"[{', '.join(n.name + ('*' if n.role != 'compute' else '') for n in a.nodes)}], "
                f"spec {self.before.fabric!r} -> {a.fabric!r})")


def _frozen(plan: Plan) -> Frozen:
    return Frozen.of_items(list(plan.switches), list(plan.cables), list(plan.patch_panels), list(plan.trunks))


def _merged(inv: Inventory, plan: Plan) -> Inventory:
    return inv.model_copy(update={"switches": list(plan.switches), "cables": list(plan.cables),
                                  "patch_panels": list(plan.patch_panels), "trunks": list(plan.trunks)})


KINDS = ("ratio", "spines", "retire", "grow", "infra", "max_sus")
RATIO = {"1:1": 1, "2:1": 2, "4:1": 4}


@st.composite
def edits(draw: st.DrawFn, kinds: tuple[str, ...] = KINDS) -> Edit:
    model = draw(st.sampled_from(["QM8700", "QM9700"]))
    rails = draw(st.integers(min_value=1, max_value=3))
    su = 4 * draw(st.integers(min_value=1, max_value=4))
    spec = FabricSpec(kind=draw(st.sampled_from(["rail-optimized", "fat-tree"])),
                      tiers=draw(st.sampled_from(["auto", 3])), rate=CAT.switches[model].rate,  # type: ignore[arg-type,unused-ignore]
                      leaf_model=model, oversubscription=draw(st.sampled_from(["1:1", "2:1", "4:1"])),  # type: ignore[arg-type,unused-ignore]
                      su_size=su, max_sus=draw(st.sampled_from([None, 6])))
    total = draw(st.integers(min_value=2, max_value=5 * su))
    extra = draw(st.integers(min_value=0, max_value=su))
    full = synthetic_inventory(Shape(nodes=total + extra, ports_per_node=rails, nodes_per_rack=4, node_u=4), spec, CAT)
    nodes = full.nodes
    before = full.model_copy(update={"nodes": nodes[:total]})
    assert before.fabric is not None
    kind = draw(st.sampled_from(kinds))
    new_spec = before.fabric
    new_nodes = list(nodes[:total])
    if kind == "ratio":
        new_spec = new_spec.model_copy(update={"oversubscription": draw(st.sampled_from(["1:1", "2:1", "4:1"]))})
    elif kind == "spines":
        new_spec = new_spec.model_copy(update={"spines": draw(st.sampled_from([1, 2, 4, 8, 16]))})
    elif kind == "retire":  # a block of nodes (a rack, part of a unit) out of the middle
        start = draw(st.integers(min_value=0, max_value=total - 1))
        stop = draw(st.integers(min_value=start + 1, max_value=min(total, start + su)))
        new_nodes = new_nodes[:start] + new_nodes[stop:]
        assume(new_nodes)
    elif kind == "grow":
        new_nodes = list(nodes)
    elif kind == "infra":  # the last nodes become storage servers on infrastructure leaves
        cut = draw(st.integers(min_value=1, max_value=min(4, total)))
        new_spec = new_spec.model_copy(update={"infra_roles": ["storage"]})
        new_nodes = [n.model_copy(update={"role": "storage"}) if i >= total - cut else n
                     for i, n in enumerate(new_nodes)]
    else:
        new_spec = new_spec.model_copy(update={"max_sus": draw(st.sampled_from([None, 6, 8]))})
    after = full.model_copy(update={"nodes": new_nodes, "fabric": new_spec})
    if len(new_nodes) >= 2 and draw(st.booleans()):  # Lustre failover pairs among the nodes that stay: to be kept apart
        names = [n.name for n in new_nodes]
        picked = draw(st.lists(st.sampled_from(names), min_size=2, max_size=min(6, len(names)), unique=True))
        pairs = [(picked[i], picked[i + 1]) for i in range(0, len(picked) - 1, 2)]
        fs = LustreFs(name="lfs01", mgs_nids=["10.0.0.1@tcp0"], mount="/lustre/lfs01", lnet="tcp0",
                      servers=picked, failover_pairs=pairs)
        after = after.model_copy(update={"lustre": [fs]})
        before = before.model_copy(update={"lustre": [fs]})  # declared before: kept apart from the start
    return Edit(before, after, kind)


@FAST
@given(edits())
def test_a_replan_changes_only_what_it_must_and_converges(edit: Edit) -> None:
    try:
        old = plan_fabric(edit.before)
        new = plan_fabric(edit.after, frozen=_frozen(old))
    except PlanError:
        assume(False)
        raise
    storage = {n.name for n in edit.after.nodes if n.role == "storage"}
    by_ends_old = {frozenset((c.a.key, c.b.key)): c for c in old.cables}
    by_ends_new = {frozenset((c.a.key, c.b.key)): c for c in new.cables}
    # a link whose two ends stay is the same cable: id, medium, length, trunk and lane group
    for ends, c in by_ends_new.items():
        if ends in by_ends_old:
            assert by_ends_old[ends] == c, (edit.what, c.id)
    # every surviving node keeps its cables (nodes that moved to infrastructure leaves excepted)
    survivors = {n.name for n in edit.after.nodes} - storage
    old_host = {ref.key: c for c in old.cables for ref in (c.a, c.b) if ref.hca is not None}
    new_host = {ref.key: c for c in new.cables for ref in (c.a, c.b) if ref.hca is not None}
    for key, c in old_host.items():
        if key[0] in survivors and edit.what != "infra":
            assert new_host.get(key) == c, (edit.what, key)
    # no surviving switch moves; surviving trunks keep their panels
    old_sw = {s.name: s for s in old.switches}
    for s in new.switches:
        if s.name in old_sw and old_sw[s.name].model == s.model:
            assert (s.rack, s.u) == (old_sw[s.name].rack, old_sw[s.name].u), (edit.what, s.name)
    old_tr = {t.id: t for t in old.trunks}
    for t in new.trunks:
        if t.id in old_tr:
            assert (t.a_panel, t.b_panel) == (old_tr[t.id].a_panel, old_tr[t.id].b_panel)
    # the result is a valid fabric
    merged = _merged(edit.after, new)
    assert run_checks(Index(merged)) == []
    report = check_plan(Index(merged))
    assert report.ok, report.findings
    assert not [f for f in report.findings if f.rule in ("FT-EMPTY-LEAF", "HA-SHARED")]
    # HA partners on the rail leaves share no leaf
    leaves: dict[str, set[str]] = {}
    for c in new.cables:
        if c.a.hca is not None:
            leaves.setdefault(c.a.device, set()).add(c.b.device)
    for fs in edit.after.lustre:
        for a, b in fs.failover_pairs:
            if a not in storage and b not in storage:
                assert not leaves.get(a, set()) & leaves.get(b, set()), (a, b)
    # re-planning the result changes nothing
    again = plan_fabric(edit.after, frozen=_frozen(new))
    assert changes(_frozen(new), again).none
    assert again.cables == new.cables and again.switches == new.switches
    assert again.trunks == new.trunks and again.patch_panels == new.patch_panels


@FAST
@given(edits())
def test_planning_from_scratch_then_against_itself_changes_nothing(edit: Edit) -> None:
    try:
        plan = plan_fabric(edit.after)
    except PlanError:
        assume(False)
        raise
    again = plan_fabric(edit.after, frozen=_frozen(plan))
    assert again.cables == plan.cables and again.switches == plan.switches
    assert again.trunks == plan.trunks and again.patch_panels == plan.patch_panels


@FAST
@given(edits(kinds=("ratio",)))
def test_an_oversubscription_change_only_adds_or_only_removes(edit: Edit) -> None:
    assert edit.before.fabric is not None and edit.after.fabric is not None
    try:
        old = plan_fabric(edit.before)
        new = plan_fabric(edit.after, frozen=_frozen(old))
    except PlanError:
        assume(False)
        raise
    # every port cabled on both sides carries the same cable: no kept link is re-patched
    old_port = {ref.key: c for c in old.cables for ref in (c.a, c.b)}
    for c in new.cables:
        for ref in (c.a, c.b):
            assert old_port.get(ref.key, c) == c, (ref.key, old_port[ref.key].id, c.id)
    before, after = RATIO[edit.before.fabric.oversubscription], RATIO[edit.after.fabric.oversubscription]
    small, large = (new, old) if after > before else (old, new)
    assert set(small.cables) <= set(large.cables)
    assert set(small.switches) <= set(large.switches)
    assert set(small.trunks) <= set(large.trunks) and set(small.patch_panels) <= set(large.patch_panels)
    if after == before:
        assert changes(_frozen(old), new).none
    else:  # only switch-to-switch links (and spines, cores) differ
        assert all(c.a.hca is None and c.b.hca is None for c in set(large.cables) - set(small.cables))
        assert {s.role for s in set(large.switches) - set(small.switches)} <= {"spine", "core"}
