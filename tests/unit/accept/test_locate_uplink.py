"""`accept --from DIR --routes FILE` names the slow uplink (issue #36 item 3, accept/locate.py): the lab's routed plan
(its real LFTs: OpenSM over ibsim under minhop, ftree and updn, tests/fixtures/ibroute/), the lab's stand-in
ib_write_bw (lab/accept_standins.py) rating each test by the slowest link on its routed path, one cable at 1X
(a quarter): for every one of the lab's 20 uplinks the judgement names exactly that cable, with its leaf and spine
ports, at once or after the next round the finding plans (its tests saved beside the plan's and judged again).
A node-leaf cable slowed so is the port's ACC-LINK, as without routes; the outputs are the stand-in's (real
captures with the figures replaced: CONSTRUCTED)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cf_lab_inventory import LAB
from clusterforge.accept.judge import Judged, extra_tests, judge
from clusterforge.accept.locate import rates_along, route
from clusterforge.accept.plan import AcceptPlan, LinkTest, accept_plan
from clusterforge.accept.route_plan import routed_plan
from clusterforge.api import load_checked
from clusterforge.cli.main import app
from clusterforge.lab.accept_standins import ib_write_bw, outputs
from clusterforge.model.index import Index
from clusterforge.parse import ibroute
from clusterforge.validate.routes import Routes, uplinks

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "ibroute"
ENGINES = ("minhop", "ftree", "updn")
HDR = 200.0
SLOW = HDR / 4  # a link at 1X


@pytest.fixture(scope="module")
def lab() -> Index:
    return load_checked(LAB).index


def _routed(index: Index, engine: str) -> tuple[AcceptPlan, Routes]:
    tables = ibroute.parse((FIX / f"lab-{engine}" / "opensm-lfts.dump").read_text(encoding="utf-8"))
    plan, routes, _cov = routed_plan(index, accept_plan(index), tables)
    return plan, routes


def _write(d: Path, texts: Mapping[str, str]) -> None:
    for rel, text in texts.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(text, encoding="utf-8")


def _run(tmp: Path, index: Index, plan: AcceptPlan, routes: Routes, slow: str) -> tuple[Path, dict[str, float | None]]:
    cable_gbps: dict[str, float | None] = {c.id: HDR for c in index.inv.cables}
    cable_gbps[slow] = SLOW
    ports = {p.label: (SLOW if p.cable == slow else HDR) for p in plan.ports}
    d = tmp / "run"
    _write(d, outputs(plan, ports, None, rates_along(index, routes, plan.links, cable_gbps)))
    return d, cable_gbps


def _follow_up(d: Path, index: Index, routes: Routes, judged: Judged, cable_gbps: dict[str, float | None],
               plan: AcceptPlan) -> list[LinkTest]:
    """The next round a finding plans, run by the stand-in and saved beside the plan's outputs."""
    names = [line.split("save as links/")[1].split(";")[0] for f in judged.findings for line in f.details
             if "save as links/" in line]
    by_stem = {f"{p.node}_{p.hca}_{p.port}": p for p in plan.ports}
    tests = []
    for name in names:
        client, server = name.split("--")
        tests.append(LinkTest(0, by_stem[server], by_stem[client]))
    along = rates_along(index, routes, tests, cable_gbps)
    for t in tests:
        (d / "links" / t.name).write_text(ib_write_bw(t.client.hca, along[t.name]), encoding="utf-8")
    return tests


@pytest.mark.parametrize("engine", ENGINES)
def test_every_lab_uplink_slowed_is_named_by_its_cable(lab: Index, engine: str, tmp_path: Path) -> None:
    plan, routes = _routed(lab, engine)
    ups = uplinks(lab)
    assert len(ups) == 20
    at_once, after_a_round = [], []
    for i, slow in enumerate(ups):
        d, cable_gbps = _run(tmp_path / str(i), lab, plan, routes, slow)
        judged = judge(lab, d, plan, routes)
        if [(f.rule, f.cable) for f in judged.findings] != [("ACC-UPLINK", slow)]:
            (undecided,) = judged.findings  # one finding: the cables that remain, and the next round
            assert undecided.rule == "ACC-LINK" and slow in undecided.subject, undecided
            assert undecided.details and "judge it again" in undecided.action, undecided
            extra = _follow_up(d, lab, routes, judged, cable_gbps, plan)
            assert sorted(t.name for t in extra_tests(plan, d / "links")) == sorted(t.name for t in extra)
            judged = judge(lab, d, plan, routes)
            assert judged.tests_extra == len(extra)
            after_a_round.append(slow)
        else:
            at_once.append(slow)
        (f,) = judged.findings
        assert (f.rule, f.cable, f.severity) == ("ACC-UPLINK", slow, "error"), judged.findings
        cable = lab.cables[slow]
        leaf, spine = (cable.a, cable.b) if lab.switches[cable.a.device].role == "leaf" else (cable.b, cable.a)
        assert f.switch == leaf.device and f.port == f"{leaf.device}/{leaf.port}" and f.host is None
        assert f.floor is not None and f"{leaf.device}/{leaf.port} - {spine.device}/{spine.port}" in f.floor
        assert f.details and all(slow in line for line in f.details), f.details
    print(f"{engine}: {len(at_once)} of 20 uplinks named from the plan's tests, {len(after_a_round)} after one "
          "more round")
    assert len(at_once) + len(after_a_round) == 20


@pytest.mark.parametrize("engine", ENGINES)
def test_a_slow_node_leaf_cable_is_still_the_ports_finding(lab: Index, engine: str, tmp_path: Path) -> None:
    plan, routes = _routed(lab, engine)
    victim = plan.ports[3]
    d, _ = _run(tmp_path, lab, plan, routes, victim.cable)
    found = judge(lab, d, plan, routes).findings
    (f,) = [f for f in found if f.severity == "error"]  # the all_reduces it slows are warnings naming it
    assert (f.rule, f.subject, f.cable, f.host) == ("ACC-LINK", victim.label, victim.cable, victim.node), f
    assert {g.rule for g in found if g is not f} <= {"ACC-NCCL-FABRIC"}


def test_a_clean_run_with_routes_has_no_finding_and_without_them_a_slow_uplink_is_a_path(lab: Index,
                                                                                       tmp_path: Path) -> None:
    plan, routes = _routed(lab, "minhop")
    d, _ = _run(tmp_path / "clean", lab, plan, routes, "none")
    judged = judge(lab, d, plan, routes)
    assert judged.findings == [] and judged.tests_run == judged.tests_planned and judged.tests_extra == 0
    slow = uplinks(lab)[0]
    d, _ = _run(tmp_path / "slow", lab, plan, routes, slow)
    blind = judge(lab, d, plan)  # the same outputs without the routes: pairs between leaves, no cable
    assert blind.findings and all(f.rule == "ACC-LINK" and f.cable != slow for f in blind.findings)
    assert all("path between the leaves" in f.action for f in blind.findings), blind.findings


def test_a_file_that_names_no_two_planned_ports_is_no_extra_test(lab: Index, tmp_path: Path) -> None:
    plan = accept_plan(lab)
    d = tmp_path / "links"
    d.mkdir()
    planned = {t.name for t in plan.links}
    a, b = next((a, b) for a in plan.ports for b in plan.ports
                if a != b and f"{a.node}_{a.hca}_{a.port}--{b.node}_{b.hca}_{b.port}" not in planned)
    for name in (f"{a.node}_{a.hca}_{a.port}--{b.node}_{b.hca}_{b.port}", f"{a.node}_{a.hca}_{a.port}--nowhere_x_1",
                 f"{a.node}_{a.hca}_{a.port}--{a.node}_{a.hca}_{a.port}", "notes.txt", plan.links[0].name):
        (d / name).write_text("x")
    assert [t.name for t in extra_tests(plan, d)] == [f"{a.node}_{a.hca}_{a.port}--{b.node}_{b.hca}_{b.port}"]


@pytest.mark.parametrize("engine", ENGINES)
def test_where_one_test_crosses_the_uplink_the_next_round_splits_what_remains(lab: Index, engine: str,
                                                                              tmp_path: Path) -> None:
    """A plan of round 1 and one cross-leaf round (each uplink crossed by one test at most, as on a fabric with
    no room for a second crossing): a slow uplink's test leaves it and the other uplink of its route, neither
    crossed by a fast test. The finding names both and plans the round that splits them (each test crosses one
    of the two and no other); run and saved beside the plan's outputs, the judgement names the uplink."""
    full, routes = _routed(lab, engine)
    plan = AcceptPlan(nodes=full.nodes, links=[t for t in full.links if t.round <= 2], fabric=full.fabric,
                      ports=full.ports, uplinks=full.uplinks)
    undecided = 0
    for i, slow in enumerate(uplinks(lab)):
        d, cable_gbps = _run(tmp_path / str(i), lab, plan, routes, slow)
        judged = judge(lab, d, plan, routes)
        crossed = [t for t in plan.links if slow in route(lab, routes, t)[0]]
        if not crossed:  # the one uplink in 20 this round-robin does not cross: nothing is slow, nothing found
            assert judged.findings == [], judged.findings
            continue
        if [f.rule for f in judged.findings] == ["ACC-UPLINK"]:
            continue
        (f,) = judged.findings
        assert f.rule == "ACC-LINK" and slow in f.subject and f.subject.startswith("cables "), f
        rounds = {line.split(":")[0] for line in f.details}
        assert rounds == {f"round {plan.rounds + 1}"}, f.details  # one round: the two tests share no port
        assert len(f.details) == len(f.subject.split(", ")), f.details
        _follow_up(d, lab, routes, judged, cable_gbps, plan)
        (g,) = judge(lab, d, plan, routes).findings
        assert (g.rule, g.cable) == ("ACC-UPLINK", slow), g
        undecided += 1
    print(f"{engine}: {undecided} of 20 uplinks named after the round the finding planned")
    assert undecided >= 10


def test_the_command_judges_along_the_routes_it_is_given(lab: Index, tmp_path: Path) -> None:
    """`accept --from DIR --routes FILE`: the same plan as `--plan --routes FILE` (the tests the routes add are
    read), the slow uplink by its cable in the JSON; without --routes, the plan's own tests only."""
    lfts = FIX / "lab-minhop" / "opensm-lfts.dump"
    plan, routes = _routed(lab, "minhop")
    slow = uplinks(lab)[5]
    d, _ = _run(tmp_path, lab, plan, routes, slow)
    res = CliRunner().invoke(app, ["accept", str(LAB), "--from", str(d), "--routes", str(lfts), "--format", "json"])
    assert res.exit_code == 4, res.output
    doc = json.loads(res.stdout)
    assert [(f["rule"], f["cable"]) for f in doc["findings"]] == [("ACC-UPLINK", slow)], doc["findings"]
    assert doc["tests_run"] == doc["tests_planned"] and doc["routes"] == str(lfts)
    res = CliRunner().invoke(app, ["accept", str(LAB), "--from", str(d), "--routes", str(FIX / "lab-minhop"),
                                   "--format", "text"])
    assert res.exit_code == 4 and f"cable {slow}" in res.stdout and "ACC-UPLINK" in res.stdout, res.stdout
