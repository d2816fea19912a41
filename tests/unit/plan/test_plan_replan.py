"""Re-planning against the frozen as-built fabric: worked examples on prod and staging.

Each edit is made to the committed inventory (its cabling.generated.yaml is the frozen fabric)
and planned again; the counts are what an engineer expects the edit to cost, no more.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from _plan_util import ROOT
from typer.testing import CliRunner

from clusterforge.check import run_checks
from clusterforge.cli.main import app
from clusterforge.inventory.load import load_inventory
from clusterforge.model import Cable, Inventory, Switch
from clusterforge.model.index import Index
from clusterforge.plan import Plan, apply_plan, check_plan, plan_fabric
from clusterforge.plan.changes import Changes, changes
from clusterforge.plan.frozen import EMPTY, Frozen


def _load(env: str) -> Inventory:
    inv, _ = load_inventory(ROOT / "inventories" / env)
    return inv


def _replan(inv: Inventory, **spec: object) -> tuple[Plan, Changes]:
    assert inv.fabric is not None
    edited = inv.model_copy(update={"fabric": inv.fabric.model_copy(update=spec)}) if spec else inv
    plan = plan_fabric(edited)
    return plan, changes(Frozen.of(inv), plan)


def _tally(ch: Changes) -> dict[str, tuple[int, int, int, int]]:
    return {k: (t.kept, t.changed, t.added, t.removed) for k, t in
            (("switches", ch.switches), ("cables", ch.cables), ("trunks", ch.trunks), ("panels", ch.patch_panels))}


def _places(plan: Plan) -> dict[str, tuple[str, int]]:
    return {s.name: (s.rack, s.u) for s in plan.switches}


def _frozen_places(inv: Inventory) -> dict[str, tuple[str, int]]:
    return {s.name: (s.rack, s.u) for s in Frozen.of(inv).switches.values()}


def test_prod_as_committed_replans_to_itself() -> None:
    inv = _load("prod")
    plan, ch = _replan(inv)
    assert ch.none and ch.recabled_nodes == ()
    assert list(plan.cables) == [c for c in inv.cables if c.generated]
    assert apply_plan(inv).cables == inv.cables


def test_prod_1_to_1_becomes_2_to_1_only_removes_uplinks_and_spines() -> None:
    # 20 -> 10 uplinks per leaf: spines 11-20 go with their 28 x 10 = 280 uplinks; nothing is added,
    # no kept cable changes, no leaf moves; trunks left empty (77) and panels left empty (3) go too
    inv = _load("prod")
    plan, ch = _replan(inv, oversubscription="2:1")
    assert _tally(ch) == {"switches": (38, 0, 0, 10), "cables": (814, 0, 0, 280), "trunks": (106, 0, 0, 77),
                          "panels": (19, 0, 0, 3)}
    assert ch.recabled_nodes == ()
    gone = set(_frozen_places(inv)) - set(_places(plan))
    assert gone == {f"spine{n:02d}" for n in range(11, 21)}
    assert all(_frozen_places(inv)[n] == where for n, where in _places(plan).items())
    kept = {c.id for c in plan.cables}
    assert all(c.b.device in gone for c in Frozen.of(inv).cables if c.id not in kept)
    assert check_plan(Index(_merged(inv, plan, oversubscription="2:1"))).ok


def test_prod_rack_retired_removes_its_cables_only() -> None:
    # prod-su03-r02's four nodes (2 rails each) leave: their 8 cables go; nobody else moves
    inv = _load("prod")
    edited = inv.model_copy(update={"nodes": [n for n in inv.nodes if n.rack != "prod-su03-r02"],
                                    "racks": [r for r in inv.racks if r.name != "prod-su03-r02"]})
    plan = plan_fabric(edited)
    ch = changes(Frozen.of(inv), plan)
    assert _tally(ch) == {"switches": (48, 0, 0, 0), "cables": (1086, 0, 0, 8), "trunks": (183, 0, 0, 0),
                          "panels": (22, 0, 0, 0)}
    assert ch.recabled_nodes == ("gpu0045", "gpu0046", "gpu0047", "gpu0048")


def test_prod_scalable_unit_retired_keeps_the_spines() -> None:
    # SU 5 (gpu0081-gpu0100) retired: its 2 leaves, 40 node cables and 40 uplinks go; the 20 spines
    # stay (the frozen spine count still fits), every other cable stays where it is
    inv = _load("prod")
    su5 = {f"gpu{n:04d}" for n in range(81, 101)}
    edited = inv.model_copy(update={"nodes": [n for n in inv.nodes if n.name not in su5]})
    plan = plan_fabric(edited)
    ch = changes(Frozen.of(inv), plan)
    assert _tally(ch)["switches"] == (46, 0, 0, 2)
    assert _tally(ch)["cables"] == (1094 - 80, 0, 0, 80)
    assert set(ch.recabled_nodes) == su5
    assert not {"leaf-su05-r0", "leaf-su05-r1"} & set(_places(plan))


def test_staging_spines_4_to_8() -> None:
    # 16 uplinks per leaf stay 16: 4 links to each of 4 spines become 2 to each of 8. Each leaf keeps 2
    # of its 4 links to every old spine and gets 2 to every new one: 6 leaves x 4 x 2 = 48 removed and
    # 48 added; the 4 new spines are the only new switches; no node is re-cabled, no switch moves
    inv = _load("staging")
    plan, ch = _replan(inv, spines=8)
    assert _tally(ch) == {"switches": (10, 0, 4, 0), "cables": (118, 0, 48, 48), "trunks": (22, 0, 0, 0),
                          "panels": (3, 0, 0, 0)}
    assert ch.recabled_nodes == ()
    assert all(_frozen_places(inv)[n] == w for n, w in _places(plan).items() if n in _frozen_places(inv))
    merged = _merged(inv, plan, spines=8)
    assert run_checks(Index(merged)) == [] and check_plan(Index(merged)).ok


def test_prod_ha_pairs_moved_apart_from_the_plan_without_them() -> None:
    # prod planned before the HA groups were declared: sm01/sm02 and every lus pair on leaf-su13-r0 or
    # leaf-su14-r0. With them, the second of each group moves (11 nodes), one leaf is added for them
    inv = _load("prod")
    bare = inv.model_copy(update={
        "switches": [], "cables": [], "patch_panels": [], "trunks": [],
        "lustre": [fs.model_copy(update={"failover_pairs": []}) for fs in inv.lustre],
        "opensm": inv.opensm.model_copy(update={"sm_nodes": inv.opensm.sm_nodes[:1]}) if inv.opensm else None})
    old = plan_fabric(bare, frozen=EMPTY)
    frozen = Frozen.of_items(list(old.switches), list(old.cables), list(old.patch_panels), list(old.trunks))
    base = inv.model_copy(update={"switches": [], "cables": [], "patch_panels": [], "trunks": []})
    plan = plan_fabric(base, frozen=frozen)
    ch = changes(frozen, plan)
    assert ch.recabled_nodes == ("lus02", "lus04", "lus06", "lus08", "lus10", "lus12", "lus14", "lus16", "lus18",
                                 "lus20", "sm02")
    assert _tally(ch)["switches"] == (47, 0, 1, 0)  # leaf-su15-r0 for the seven servers that had to move on
    leaf = {c.a.device: c.b.device for c in plan.cables if c.a.hca is not None}
    trunk = {c.a.device: c.trunk for c in plan.cables if c.a.hca is not None}
    pairs = [("sm01", "sm02")] + [(f"lus{n:02d}", f"lus{n + 1:02d}") for n in range(1, 20, 2)]
    for a, b in pairs:
        assert leaf[a] != leaf[b], (a, b)
        assert trunk[a] is None or trunk[a] != trunk[b], (a, b)
    report = check_plan(Index(_with(base, plan)))
    assert report.ok and not [f for f in report.findings if f.rule in ("HA-SHARED", "FT-EMPTY-LEAF")]


def test_plan_checks_warn_about_an_empty_leaf_and_shared_ha_trunks() -> None:
    inv = _load("prod")
    extra = Switch(name="leaf-extra", model="QM8700", role="leaf", rack="prod-core03", u=40)
    ups = [Cable.model_validate({"id": f"X-{s}", "a": f"leaf-extra/{21 + s}", "b": f"spine{s + 1:02d}/39",
                                 "media": "AOC", "length_m": 5}) for s in range(20)]
    # sm02 re-cabled by hand onto sm01's trunk (next lane) and leaf
    sm01 = next(c for c in inv.cables if c.a.device == "sm01")
    sm02 = next(c for c in inv.cables if c.a.device == "sm02")
    moved = sm02.model_copy(update={"b": sm01.b.model_copy(update={"port": 15}), "trunk": sm01.trunk,
                                    "lane_group": 2, "media": sm01.media, "length_m": sm01.length_m,
                                    "fiber_type": sm01.fiber_type, "id": "X-sm02"})
    cables = [c for c in inv.cables if c.id not in (sm02.id, f"{sm01.b.device}.15")] + ups + [moved]
    report = check_plan(Index(inv.model_copy(update={"switches": [*inv.switches, extra], "cables": cables})))
    found = {(f.rule, f.subject) for f in report.findings}
    assert ("FT-EMPTY-LEAF", "leaf-extra") in found
    assert ("HA-SHARED", "subnet managers") in found


def _merged(inv: Inventory, plan: Plan, **spec: object) -> Inventory:
    assert inv.fabric is not None
    return _with(inv.model_copy(update={"fabric": inv.fabric.model_copy(update=spec)}), plan)


def _with(inv: Inventory, plan: Plan) -> Inventory:
    return inv.model_copy(update={
        "switches": [s for s in inv.switches if s.name not in {p.name for p in plan.switches}] + list(plan.switches),
        "cables": [c for c in inv.cables if not c.generated] + list(plan.cables),
        "patch_panels": list(plan.patch_panels), "trunks": list(plan.trunks)})


def test_plan_write_reports_the_changes_and_converges(tmp_path: Path) -> None:
    env = tmp_path / "prod"
    shutil.copytree(ROOT / "inventories" / "prod", env)
    fabric = env / "fabric.yaml"
    fabric.write_text(fabric.read_text(encoding="utf-8").replace('"1:1"', '"2:1"'), encoding="utf-8")
    first = CliRunner().invoke(app, ["plan", str(env), "--write"])
    assert first.exit_code == 0, first.output
    assert ("changes against the frozen fabric: switches 38 kept, 0 added, 10 removed; cables 814 kept, 0 added, "
            "280 removed; trunks 106 kept, 0 added, 77 removed; patch panels 19 kept, 0 added, 3 removed"
            ) in first.output
    again = CliRunner().invoke(app, ["plan", str(env), "--write"])
    assert again.exit_code == 0, again.output
    assert "changes against the frozen fabric: none" in again.output


def test_infrastructure_nodes_added_take_free_ports_only() -> None:
    # prod with its SMs and Lustre servers on infrastructure leaves, frozen; two more Lustre servers (a
    # failover pair) join: their two cables are the only change, on different infrastructure leaves
    inv = _load("prod")
    assert inv.fabric is not None
    spec = inv.fabric.model_copy(update={"infra_roles": ["subnet-manager", "storage"]})
    base = inv.model_copy(update={"switches": [], "cables": [], "patch_panels": [], "trunks": [], "fabric": spec})
    old = plan_fabric(base, frozen=EMPTY)
    frozen = Frozen.of_items(list(old.switches), list(old.cables), list(old.patch_panels), list(old.trunks))
    lus20 = next(n for n in inv.nodes if n.name == "lus20")
    more = [lus20.model_copy(update={"name": "lus21", "u": 32}), lus20.model_copy(update={"name": "lus22", "u": 34})]
    fs = inv.lustre[0]
    grown = base.model_copy(update={"nodes": [*base.nodes, *more], "lustre": [fs.model_copy(update={
        "servers": [*fs.servers, "lus21", "lus22"], "failover_pairs": [*fs.failover_pairs, ("lus21", "lus22")]})]})
    plan = plan_fabric(grown, frozen=frozen)
    ch = changes(frozen, plan)
    assert _tally(ch)["cables"] == (len(old.cables), 0, 2, 0)
    assert _tally(ch)["switches"] == (len(old.switches), 0, 0, 0)
    assert ch.recabled_nodes == ("lus21", "lus22")
    leaf = {c.a.device: c.b.device for c in plan.cables if c.a.hca is not None}
    assert leaf["lus21"] != leaf["lus22"] and leaf["lus21"].startswith("leaf-infra-")
