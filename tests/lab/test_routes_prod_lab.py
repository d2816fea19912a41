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

ROOT = Path(__file__).resolve().parents[2]
PROD = ROOT / "inventories" / "prod"
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
