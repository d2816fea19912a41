"""Acceptance from the SM's routes on a three-tier fabric (issue #36): the generated 256-node inventory
(bench/gen_inventory.py: 66 leaves, 96 spines, 64 cores; 2,112 leaf-spine and 3,072 spine-core cables) rendered,
run by ibsim and routed by the real OpenSM (minhop, lmc 0), its own 38 MB dump read as a stream.

Spine-core cables are crossed only by flows that reach their spine from the leaves below: the routed plan's
flows over every uplink are checked against every leaf's route to every destination followed forwards (what
crosses it is exactly what the tables send over it), and the rounds against the plan's rules. Long: about a
minute (OpenSM routes it in 5 s; the forward walk over 135,000 routes takes the rest)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from clusterforge.accept.flows import Flows
from clusterforge.accept.plan import accept_plan
from clusterforge.accept.route_plan import ROUNDS, cover
from clusterforge.api import load_checked
from clusterforge.collect.store import read_lines
from clusterforge.lab.routes_capture import route_fabric
from clusterforge.parse import ibroute
from clusterforge.render import FabricView, render_environment
from clusterforge.validate.routes import resolve, uplinks

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.lab, pytest.mark.long]


def test_a_three_tier_fabrics_spine_core_cables_are_planned_from_the_routes(tmp_path: Path) -> None:
    if shutil.which("ibsim") is None or shutil.which("opensm") is None:
        pytest.fail("ibsim and opensm missing: run scripts/lab-deps.sh (CI does)")
    env = tmp_path / "g256"
    subprocess.run([sys.executable, str(ROOT / "bench" / "gen_inventory.py"), "bench", str(env), "--nodes", "256"],
                   check=True, capture_output=True)
    index = load_checked(env).index
    assert Counter(s.role for s in index.inv.switches) == {"leaf": 66, "spine": 96, "core": 64}
    sm = index.inv.opensm
    assert sm is not None
    node = sm.sm_nodes[0].node
    routed = route_fabric(render_environment(index, "g256")["fabric/ibsim.net"],
                          f"{node} {index.hardware[node].hcas[0].name}", "minhop", tmp_path / "sm", diags=False)
    routes = resolve(index, FabricView(index).guids, ibroute.read(read_lines(routed.lfts_path)))
    assert routes.problems == () and len(routes.lft) == 226
    plan = accept_plan(index)
    flows = Flows.of(index, routes, plan.ports)
    ups = uplinks(index)
    spine_core = {c for c in ups if {index.switches[e.device].role for e in (index.cables[c].a, index.cables[c].b)}
                  == {"spine", "core"}}
    assert len(ups) == 5184 and len(spine_core) == 3072

    forwards: set[str] = set()  # every leaf's route to every destination, followed forwards
    for leaf, ports in flows.by_leaf.items():
        for server in flows.host_at.values():
            if server.leaf != leaf:
                cables, why = flows.route(ports[0], server)
                assert why is None, why
                forwards.update(cables)
    backwards = {c for c in ups if next(flows.classes(c), None) is not None}
    assert backwards == forwards & set(ups)
    assert backwards & spine_core  # spine-core cables found from the leaves below their spine
    # what minhop leaves to no host's traffic: most spine-core cables (the leaves of a unit send each
    # destination to one spine, and that spine sends all it gets of them up one cable of each bundle)
    assert len(spine_core - backwards) > 2500

    tests, cov = cover(index, routes, plan.ports, plan.links)
    assert max(t.round for t in tests) <= ROUNDS and cov.problems == []
    assert set(cov.unreachable) == {c for c in ups if not cov.crossing[c]}
    assert {c for c in ups if cov.crossing[c]} <= backwards
    crossed_spine_core = {c for c in spine_core if cov.crossing[c]}
    assert crossed_spine_core == (backwards & spine_core) - set(cov.unreachable) and crossed_spine_core
    for cid in set(ups) - backwards:
        assert "no route sends a host's traffic over it" in cov.unreachable[cid]
    for cid in set(cov.unreachable) & backwards:  # reachable, yet no room: flows only from the SM leaves' ports
        assert "not crossed in the plan's 5 rounds" in cov.unreachable[cid]
    by_name = {t.name: t for t in tests}
    for r in {t.round for t in tests}:
        mine = [t for t in tests if t.round == r]
        used = [p for t in mine for p in (t.client, t.server)]
        assert len(used) == len(set(used)), f"round {r}: a port twice"
        if r > 1:
            walked = [flows.walk(t.client, t.server) for t in mine]
            ways = [w for one in walked if one is not None for w in one[1]]
            assert len(ways) == sum(len(flows.route(t.client, t.server)[0]) for t in mine)
            assert len(ways) == len(set(ways)), f"round {r}: a cable twice the same way"
    for cid, names in cov.crossing.items():
        for name in names:
            assert cid in flows.route(by_name[name].client, by_name[name].server)[0]
    uses = Counter(p for t in tests for p in (t.client, t.server))
    assert all(uses[p] >= 2 for p in plan.ports)
