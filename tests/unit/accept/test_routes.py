"""The built fabric's routes on the declared cables (issue #36, validate/routes.py): the lab's real LFTs (OpenSM over
ibsim, minhop/ftree/updn: tests/fixtures/ibroute/) resolved to switches and HCA ports by GUID, every flow between
two HCA ports followed cable by cable; what does not fit the declaration said, never a shorter path."""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from pathlib import Path

import pytest

from cf_lab_inventory import LAB
from clusterforge.accept.plan import LinkTest, host_ports
from clusterforge.api import load_checked
from clusterforge.model.index import Index
from clusterforge.parse import ibroute
from clusterforge.parse.ibroute import SwitchLft
from clusterforge.render import FabricView
from clusterforge.validate import routes as R

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "ibroute"
ENGINES = ("minhop", "ftree", "updn")


@pytest.fixture(scope="module")
def lab() -> FabricView:
    return FabricView(load_checked(LAB).index)


def _tables(engine: str, form: str = "ibroute.txt") -> tuple[SwitchLft, ...]:
    return ibroute.parse((FIX / f"lab-{engine}" / form).read_text(encoding="utf-8"))


@pytest.mark.parametrize("engine", ENGINES)
def test_every_flow_is_followed_cable_by_cable_and_every_uplink_carries_one(lab: FabricView, engine: str) -> None:
    index = lab.index
    routes = R.resolve(index, lab.guids, _tables(engine))
    ports = host_ports(index)
    assert routes.problems == () and len(routes.lft) == 7 and len(routes.lid) == len(ports) == 19
    carried: dict[str, int] = {}
    for a in ports:
        for b in ports:
            if a == b:
                continue
            cables, why = R.path(index, routes, (a.node, a.hca, a.port), (b.node, b.hca, b.port))
            assert why is None, why
            assert cables[0] == a.cable and cables[-1] == b.cable
            if a.leaf == b.leaf:
                assert len(cables) == 2  # up to the leaf and down again
            else:
                assert len(cables) == 4  # leaf, spine, leaf: two uplinks crossed
            for cid in cables:
                carried[cid] = carried.get(cid, 0) + 1
    uplinks = R.uplinks(index)
    assert len(uplinks) == 20 and all(carried.get(c, 0) > 0 for c in uplinks)
    assert R.idle_uplinks(index, routes) == []


def test_the_three_forms_resolve_alike(lab: FabricView) -> None:
    forms = [R.resolve(lab.index, lab.guids, _tables("ftree", f)) for f in ("ibroute.txt", "dump_fts.txt",
                                                                             "opensm-lfts.dump")]
    assert forms[0].lft == forms[1].lft == forms[2].lft and forms[0].lid == forms[1].lid == forms[2].lid


def _edit(tables: tuple[SwitchLft, ...], switch: str, **ports: int | None) -> tuple[SwitchLft, ...]:
    """CONSTRUCTED from the capture: `switch`'s route to each named destination LID (`l12=None`: dropped) changed."""
    out = []
    for t in tables:
        if t.name == switch:
            routes = []
            for r in t.routes:
                want = ports.get(f"l{r.lid}", r.port)
                if want is not None:
                    routes.append(dataclasses.replace(r, port=want))
            t = dataclasses.replace(t, routes=tuple(routes))
        out.append(t)
    return tuple(out)


def _lid(routes: R.Routes, node: str, hca: str) -> int:
    return routes.lid[(node, hca, 1)]


def test_a_route_the_switch_does_not_have_is_said(lab: FabricView) -> None:
    base = R.resolve(lab.index, lab.guids, _tables("ftree"))
    dst = _lid(base, "gpu05", "mlx5_0")
    routes = R.resolve(lab.index, lab.guids, _edit(_tables("ftree"), "leaf-su01-r0", **{f"l{dst}": None}))
    cables, why = R.path(lab.index, routes, ("gpu01", "mlx5_0", 1), ("gpu05", "mlx5_0", 1))
    assert cables == ["C-00001"] and why == f"leaf-su01-r0 does not route LID {dst} (gpu05 mlx5_0/1)"


def test_a_route_out_of_an_uncabled_port_is_said(lab: FabricView) -> None:
    base = R.resolve(lab.index, lab.guids, _tables("ftree"))
    dst = _lid(base, "gpu05", "mlx5_0")
    routes = R.resolve(lab.index, lab.guids, _edit(_tables("ftree"), "leaf-su01-r0", **{f"l{dst}": 30}))
    _, why = R.path(lab.index, routes, ("gpu01", "mlx5_0", 1), ("gpu05", "mlx5_0", 1))
    assert why == "leaf-su01-r0/30: no declared cable (the route leaves by a port the inventory does not cable)"


def test_a_loop_is_said(lab: FabricView) -> None:
    base = R.resolve(lab.index, lab.guids, _tables("ftree"))
    dst = _lid(base, "gpu05", "mlx5_0")
    # leaf-su01-r0 sends it up to spine01 (port 21: C-00020), spine01 sends it back down the same cable
    tables = _edit(_edit(_tables("ftree"), "leaf-su01-r0", **{f"l{dst}": 21}), "spine01", **{f"l{dst}": 1})
    cables, why = R.path(lab.index, R.resolve(lab.index, lab.guids, tables), ("gpu01", "mlx5_0", 1),
                         ("gpu05", "mlx5_0", 1))
    assert why is not None and "a loop" in why and cables[1:3] == ["C-00020", "C-00020"]


def _routed_around(lab: FabricView) -> R.Routes:
    """A dead link the SM routes around (CONSTRUCTED from the ftree capture): every LID leaf-su01-r0 sent out of
    port 21 (C-00020, to spine01) now leaves by port 22 (C-00021, also to spine01), and spine01 sends nothing down
    port 1."""
    tables = _tables("ftree")
    leaf = next(t for t in tables if t.name == "leaf-su01-r0")
    spine = next(t for t in tables if t.name == "spine01")
    moved = {f"l{r.lid}": 22 for r in leaf.routes if r.port == 21}
    down = {f"l{r.lid}": 2 for r in spine.routes if r.port == 1}
    return R.resolve(lab.index, lab.guids, _edit(_edit(tables, "leaf-su01-r0", **moved), "spine01", **down))


def test_an_uplink_no_route_uses_is_idle(lab: FabricView) -> None:
    assert R.idle_uplinks(lab.index, _routed_around(lab)) == ["C-00020"]


def test_tables_of_undeclared_switches_and_different_sweeps_are_problems(lab: FabricView) -> None:
    tables = _tables("ftree")
    stranger = dataclasses.replace(tables[0], guid="0x0002c90300000001", name="not-ours")
    routes = R.resolve(lab.index, lab.guids, (*tables, stranger, tables[1]))
    assert routes.problems[0] == "the table of switch 0x0002c90300000001 (not-ours) is of no declared switch's GUID"
    assert routes.problems[1].startswith("two tables of leaf-su02-r0")
    relid = dataclasses.replace(tables[2], routes=tuple(dataclasses.replace(r, lid=r.lid + 100)
                                                         if r.name == "gpu01 mlx5_0" else r for r in tables[2].routes))
    swept = R.resolve(lab.index, lab.guids, (tables[0], relid))
    assert any("gpu01 mlx5_0/1" in p and "different sweeps" in p for p in swept.problems), swept.problems


@pytest.mark.parametrize("engine", ENGINES)
def test_the_plan_from_routes_crosses_every_uplink(lab: FabricView, engine: str) -> None:
    """The plan without routes leaves an uplink of the lab uncrossed under each engine (its assumption fails on a
    leaf of 4 hosts and 4 uplinks); from the routes every uplink is crossed, each twice, in 5 rounds, no port twice
    in a round, no cable twice the same way in a round, every port in two tests, and what the coverage says each
    test crosses is what its flow crosses."""
    from clusterforge.accept import route_plan
    from clusterforge.accept.plan import accept_plan

    index = lab.index
    plan = accept_plan(index)
    routes = R.resolve(index, lab.guids, _tables(engine))
    _, assumed = route_plan.cover(index, routes, plan.ports, plan.links, want=0)
    assert sorted(c for c, names in assumed.crossing.items() if not names) != []
    tests, cov = route_plan.cover(index, routes, plan.ports, plan.links)
    within = [t for t in plan.links if t.round == 1]
    assert tests[:len(within)] == within and all(not t.cross_leaf for t in within)  # round 1 stays
    assert all(t.cross_leaf for t in tests[len(within):])  # the rounds after it come from the routes
    assert cov.unreachable == {} and cov.problems == []
    assert all(len(names) >= 1 for names in cov.crossing.values())
    assert all(len(names) >= 2 for names in cov.crossing.values())  # the lab has room for a second crossing
    assert max(t.round for t in tests) <= 5
    uses = Counter(p for t in tests for p in (t.client, t.server))
    assert all(uses[p] >= 2 for p in plan.ports), [p.label for p in plan.ports if uses[p] < 2]
    for r in {t.round for t in tests}:
        used = [p for t in tests if t.round == r for p in (t.client, t.server)]
        assert len(used) == len(set(used)), f"round {r}: a port twice"
        if r > 1:
            assert _one_way_each(index, routes, [t for t in tests if t.round == r]), f"round {r}: a cable twice"
    by_name = {t.name: t for t in tests}
    for cid, names in cov.crossing.items():
        for name in names:
            t = by_name[name]
            cables, why = R.path(index, routes, (t.client.node, t.client.hca, t.client.port),
                                 (t.server.node, t.server.hca, t.server.port))
            assert why is None and cid in cables


def _one_way_each(index: Index, routes: R.Routes, tests: list[LinkTest]) -> bool:
    """No cable carries two of these tests' flows the same way (a cable is full duplex: one each way)."""
    ways: list[tuple[str, str]] = []
    for t in tests:
        at = t.client.node
        for cid in R.path(index, routes, (t.client.node, t.client.hca, t.client.port),
                          (t.server.node, t.server.hca, t.server.port))[0]:
            ways.append((cid, at))
            c = index.cables[cid]
            at = c.b.device if c.a.device == at else c.a.device
    return len(ways) == len(set(ways))


def test_an_uplink_the_sm_routes_around_is_reported_by_cable(lab: FabricView) -> None:
    from clusterforge.accept import route_plan
    from clusterforge.accept.plan import accept_plan

    routes = _routed_around(lab)
    plan = accept_plan(lab.index)
    _, cov = route_plan.cover(lab.index, routes, plan.ports, plan.links)
    assert list(cov.unreachable) == ["C-00020"]
    assert cov.unreachable["C-00020"].startswith("cable C-00020 (leaf-su01-r0/21 - spine01/1): no route sends")
    assert cov.crossing["C-00020"] == [] and all(cov.crossing[c] for c in cov.crossing if c != "C-00020")


def _cli(*args: str) -> tuple[int, str]:
    from typer.testing import CliRunner

    from clusterforge.cli.main import app

    result = CliRunner().invoke(app, ["accept", str(LAB), "--plan", *args])
    return result.exit_code, result.output


def test_accept_plan_takes_the_routes_from_a_file_or_opensms_dump_directory() -> None:
    import json

    code, out = _cli("--routes", str(FIX / "lab-minhop" / "ibroute.txt"), "--format", "json")
    assert code == 0, out
    data = json.loads(out)
    assert data["uplinks"]["by"] == "routes" and data["uplinks"]["unreachable"] == {}
    assert len(data["uplinks"]["crossing"]) == 20 and all(data["uplinks"]["crossing"].values())
    planned = {t["output"].removeprefix("links/") for t in data["links"]}
    assert all(set(names) <= planned for names in data["uplinks"]["crossing"].values())
    code, out = _cli("--routes", str(FIX / "lab-updn"))  # a directory: OpenSM's opensm-lfts.dump in it
    assert code == 0 and "20 of 20 crossed by a test" in out and "lab-updn/opensm-lfts.dump" in out, out
    code, out = _cli("--format", "json")
    assert code == 0 and json.loads(out)["uplinks"] == {"by": "assumption"}
    code, out = _cli()
    assert "covered by assumption" in out and "give --routes" in out


def test_accept_plan_refuses_routes_that_are_not_tables_or_not_this_fabric(tmp_path: Path) -> None:
    code, out = _cli("--routes", str(FIX / "lab-minhop" / "ibswitches.txt"))
    assert code == 2 and "line 1: not a table header" in out, out
    other = tmp_path / "other.txt"  # CONSTRUCTED: a real table's shape with a GUID no declared switch has
    other.write_text("Unicast lids [0-1] of switch Lid 1 guid 0x0002c90300000001 ('sw'):\n"
                     "0x0001 000 # Switch portguid 0x0002c90300000001: 'sw'\n1 lids dumped\n")
    code, out = _cli("--routes", str(other))
    assert code == 2 and "no table is of a declared switch" in out, out
    code, out = _cli("--routes", str(tmp_path / "absent"))
    assert code == 2 and "--routes" in out
    fifo = tmp_path / "fifo"  # read as a stream, still never a FIFO (the read would block forever)
    os.mkfifo(fifo)
    code, out = _cli("--routes", str(fifo))
    assert code == 2 and "not a regular file" in out, out
    binary = tmp_path / "binary"
    binary.write_bytes(b"\x00\xff\xfe" * 100)
    code, out = _cli("--routes", str(binary))
    assert code == 2 and "line 1: not a table header" in out, out


def test_the_tables_are_read_as_a_stream_up_to_a_cap(tmp_path: Path) -> None:
    from clusterforge.collect.store import OutputTooLarge, read_lines

    text = (FIX / "lab-minhop" / "opensm-lfts.dump").read_bytes()
    big = tmp_path / "lfts"
    big.write_bytes(text * 100)  # 1.3 MB
    lines = read_lines(big, max_mb=1)
    assert next(lines).startswith("Unicast lids")  # lines come before the whole file is read
    with pytest.raises(OutputTooLarge, match="larger than 1 MB"):
        for _ in lines:
            pass


@pytest.mark.parametrize("engine", ENGINES)
def test_the_flows_over_each_uplink_are_exactly_those_whose_route_crosses_it(lab: FabricView, engine: str) -> None:
    """accept/flows.py walks the tables backwards from a cable's near end; every (source leaf, destination) class
    it names is one whose route crosses the cable, and it misses none: checked against every leaf's route to
    every destination, followed forwards."""
    from clusterforge.accept.flows import Flows
    from clusterforge.accept.plan import accept_plan

    index = lab.index
    routes = R.resolve(index, lab.guids, _tables(engine))
    flows = Flows.of(index, routes, accept_plan(index).ports)
    forwards: dict[str, set[tuple[str, int]]] = {c: set() for c in R.uplinks(index)}
    for leaf, ports in flows.by_leaf.items():
        for lid, server in flows.host_at.items():
            if server.leaf == leaf:
                continue
            cables, why = flows.route(ports[0], server)
            assert why is None, why
            for c in cables:
                if c in forwards:
                    forwards[c].add((leaf, lid))
    backwards = {c: set(flows.classes(c)) for c in forwards}
    assert backwards == forwards
    assert all(backwards.values())  # the lab's every uplink carries some host's flow


def test_lab_accept_plans_in_the_rounds_accept_plans_in() -> None:
    """`lab accept --rounds` (its lazy CLI spells the numbers) has accept's default and bound."""
    import typer
    import typer.main

    from clusterforge.accept.route_plan import MAX_ROUNDS, ROUNDS
    from clusterforge.cli.lab import app as lab_app
    from clusterforge.cli.main import app as main_app

    for app in (lab_app, main_app):
        group = typer.main.get_command(app)
        cmd = group.get_command(typer.Context(group), "accept")  # type: ignore[attr-defined]
        opt = next(p for p in cmd.params if p.name == "rounds")
        assert (opt.default, opt.min, opt.max) == (ROUNDS, 2, MAX_ROUNDS)
