"""The built fabric's routes on the declared cables (issue #36, accept/routes.py): the lab's real LFTs (OpenSM over
ibsim, minhop/ftree/updn: tests/fixtures/ibroute/) resolved to switches and HCA ports by GUID, every flow between
two HCA ports followed cable by cable; what does not fit the declaration said, never a shorter path."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from cf_lab_inventory import LAB
from clusterforge.accept import routes as R
from clusterforge.accept.plan import host_ports
from clusterforge.api import load_checked
from clusterforge.parse import ibroute
from clusterforge.parse.ibroute import SwitchLft
from clusterforge.render import FabricView

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


def test_an_uplink_no_route_uses_is_idle(lab: FabricView) -> None:
    """A dead link the SM routes around: every LID leaf-su01-r0 sent out of port 21 (C-00020, to spine01) now
    leaves by port 22 (C-00021, also to spine01), and spine01 sends nothing down port 1."""
    tables = _tables("ftree")
    leaf = next(t for t in tables if t.name == "leaf-su01-r0")
    spine = next(t for t in tables if t.name == "spine01")
    moved = {f"l{r.lid}": 22 for r in leaf.routes if r.port == 21}
    down = {f"l{r.lid}": 2 for r in spine.routes if r.port == 1}
    routes = R.resolve(lab.index, lab.guids, _edit(_edit(tables, "leaf-su01-r0", **moved), "spine01", **down))
    assert R.idle_uplinks(lab.index, routes) == ["C-00020"]


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
