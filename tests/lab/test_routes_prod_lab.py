"""Acceptance from the SM's routes on prod's fabric (issue #36, Done when): prod's rendered fabric/ibsim.net under
ibsim, routed by the real OpenSM (minhop, its default engine, then ftree and updn), its tables printed by the real
tools (tests/fixtures/ibroute/capture.py, run here: the tables of a 48-switch fabric are megabytes, so they are
captured afresh rather than kept); `accept --plan --routes` then names every cable: the 534 node-leaf cables and
the 560 uplinks, 1,094 of 1,094, in as many rounds as the plan without routes.

No containers: ibsim, OpenSM and the diags on this machine, about 15 s an engine."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from cf_lab_net import cf
from clusterforge.accept.judge import judge
from clusterforge.accept.locate import rates_along
from clusterforge.accept.plan import accept_plan
from clusterforge.accept.route_plan import routed_plan
from clusterforge.api import load_checked
from clusterforge.lab.accept_standins import outputs
from clusterforge.lab.routes_capture import route_fabric
from clusterforge.model.index import Index
from clusterforge.parse import ibroute
from clusterforge.render import render_environment
from clusterforge.validate.routes import uplinks

ROOT = Path(__file__).resolve().parents[2]
PROD = ROOT / "inventories" / "prod"
STAGING = ROOT / "inventories" / "staging"
pytestmark = pytest.mark.lab


def _capture() -> object:
    spec = importlib.util.spec_from_file_location("cf_capture_routes", ROOT / "tests/fixtures/ibroute/capture.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("engine", ["minhop", "ftree", "updn"])
def test_prods_plan_from_its_routes_names_every_cable(engine: str, tmp_path: Path) -> None:
    if shutil.which("ibsim") is None or shutil.which("opensm") is None:
        pytest.fail("ibsim and opensm missing: run scripts/lab-deps.sh (CI does)")
    _capture().main(PROD, engine, tmp_path)  # type: ignore[attr-defined]
    assert f"{engine} tables configured on all switches" in (tmp_path / "capture.source").read_text()
    code, out = cf("accept", str(PROD), "--plan", "--routes", str(tmp_path / "opensm-lfts.dump"), "--format", "json")
    assert code == 0, out[-2000:]
    plan = json.loads(out)
    uplinks = plan["uplinks"]
    assert uplinks["by"] == "routes" and uplinks["unreachable"] == {} and uplinks["problems"] == []
    crossed = {c for c, tests in uplinks["crossing"].items() if tests}
    node_leaf = {c for t in plan["links"] for c in t["cables"]}
    assert (len(crossed), len(uplinks["crossing"])) == (560, 560)
    assert (plan["coverage"]["cables_crossed"], plan["coverage"]["cables"]) == (534, 534)
    assert len(crossed | node_leaf) == 1094
    code, out = cf("accept", str(PROD), "--plan", "--format", "json")
    assert plan["coverage"]["rounds"] <= json.loads(out)["coverage"]["rounds"]
    # the same tables in ibroute's form give the same plan
    code, again = cf("accept", str(PROD), "--plan", "--routes", str(tmp_path / "ibroute.txt"), "--format", "json")
    assert code == 0 and json.loads(again)["uplinks"]["crossing"] == uplinks["crossing"]


def _gbps(index: Index, cable_id: str) -> float:
    """A cable's data rate: the slower of its two ends' declared rates (catalog Gb/s)."""
    c = index.cables[cable_id]
    rates = [index.port_rate(*end.key) for end in (c.a, c.b)]
    return float(min(index.cat.rates[r].gbps for r in rates if r is not None))


def test_staging_names_a_sample_of_its_uplinks_slowed_by_their_cable_trunk_and_lane(tmp_path: Path) -> None:
    """Issue #36 item 4 on a staging-sized fabric: staging's rendered fabric under ibsim, routed by the real OpenSM
    (minhop, lmc 0: an engine that does not spread by design), its own LFT dump; the routed plan crosses all 96
    uplinks; each of a sample of 12 (every eighth, trunked ones among them) slowed to a quarter in turn, the
    stand-in ib_write_bw rating each test along its route (CONSTRUCTED outputs), is named by `judge` as that
    cable, with its MPO trunk and lane group where it rides one."""
    if shutil.which("ibsim") is None or shutil.which("opensm") is None:
        pytest.fail("ibsim and opensm missing: run scripts/lab-deps.sh (CI does)")
    index = load_checked(STAGING).index
    sm = index.inv.opensm
    assert sm is not None
    node = sm.sm_nodes[0].node
    routed = route_fabric(render_environment(index, "staging")["fabric/ibsim.net"],
                          f"{node} {index.hardware[node].hcas[0].name}", "minhop", tmp_path / "sm", diags=False)
    tables = ibroute.parse(routed.lfts_dump)
    ups = uplinks(index)
    # in the default 5 rounds: all but the uplinks of the two leaves of 3 host ports under 16 uplinks (each port
    # crosses one a round), said with the 7 rounds that cross them all
    _, _, cov = routed_plan(index, accept_plan(index), tables)
    sparse = {c for c in ups if index.cables[c].a.device in ("leaf-su03-r0", "leaf-su04-r0")}
    assert set(cov.unreachable) < sparse and len(cov.unreachable) == 8, sorted(cov.unreachable)
    assert all("not crossed in the plan's 5 rounds" in why and "--rounds 7" in why for why in cov.unreachable.values())
    plan, routes, cov = routed_plan(index, accept_plan(index), tables, rounds=7)
    assert len(ups) == 96 and all(cov.crossing[c] for c in ups) and cov.unreachable == {}
    assert plan.rounds == 7
    sample = ups[::8]
    trunked = [c for c in sample if index.cables[c].trunk]
    assert len(sample) == 12 and trunked, sample
    healthy = {c.id: _gbps(index, c.id) for c in index.inv.cables}
    ports = {p.label: healthy[p.cable] for p in plan.ports}
    for i, slow in enumerate(sample):
        gbps: dict[str, float | None] = {**healthy, slow: healthy[slow] / 4}
        run = tmp_path / f"run{i}"
        for rel, text in outputs(plan, ports, None, rates_along(index, routes, plan.links, gbps)).items():
            (run / rel).parent.mkdir(parents=True, exist_ok=True)
            (run / rel).write_text(text)
        found = judge(index, run, plan, routes).findings
        assert [(f.rule, f.cable) for f in found] == [("ACC-UPLINK", slow)], (slow, found)
        cable = index.cables[slow]
        if cable.trunk:
            assert found[0].floor is not None and cable.trunk in found[0].floor and \
                f"lane group {cable.lane_group}" in found[0].floor, found[0].floor
    print(f"staging: {len(sample)} of 96 uplinks slowed in turn, each named ({len(trunked)} on MPO trunks); "
          f"OpenSM routed in {routed.route_s:.1f} s")
