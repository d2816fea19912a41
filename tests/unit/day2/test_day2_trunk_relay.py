"""A trunk changed in place (only its length, say) while the cables over it stay as they are (issue #21,
item 2): it is pulled and laid again, so the cables patched over it are unplugged before the pull and
plugged again after the lay, their hosts out of service meanwhile, as any recable asks. The planner
pulled it with its cables still patched over it, which the verifier rejects (`diff` said 'internal
error: the change plan breaks 1 rule(s)'). On copies of staging (leaf-spine links only over its trunks)
and prod (a trunk that carries sm01's and lus04's links)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.api import load_checked
from clusterforge.cli.main import app
from clusterforge.day2 import ChangePlan, change_plan
from clusterforge.day2.steps import PULL_TRUNK
from clusterforge.day2.verify import verify
from clusterforge.model.index import Index

ROOT = Path(__file__).resolve().parents[3]


def _relength(tmp: Path, env: str, trunk: str) -> tuple[Index, Index, ChangePlan, Path, Path]:
    """Copies of `env` before and after `trunk`'s length grows by 2 m in its cabling file; the plan."""
    before, after = tmp / "old", tmp / "new"
    shutil.copytree(ROOT / "inventories" / env, before)
    shutil.copytree(before, after)
    path = after / "cabling.generated.yaml"
    text = path.read_text(encoding="utf-8")
    line = re.search(rf"  - \{{id: {re.escape(trunk)}, [^\n]*length_m: (\d+)\}}\n", text)
    assert line is not None, f"no trunk {trunk} in {path}"
    longer = line.group(0).replace(f"length_m: {line.group(1)}}}", f"length_m: {int(line.group(1)) + 2}}}")
    path.write_text(text.replace(line.group(0), longer), encoding="utf-8")
    old, new = load_checked(before).index, load_checked(after).index
    assert old.trunks[trunk].length_m + 2 == new.trunks[trunk].length_m
    return old, new, change_plan(old, new, str(after), env), before, after


def _first_trunk_with_cables(env: str) -> str:
    index = load_checked(ROOT / "inventories" / env).index
    return next(t.id for t in index.inv.trunks if any(c.trunk == t.id for c in index.inv.cables))


@pytest.mark.parametrize(("env", "trunk"), [("staging", None), ("prod", "T-prod-core01-prod-su13-net-10")])
def test_a_trunk_relaid_in_place_has_its_cables_out_first_and_back_after(
        tmp_path: Path, env: str, trunk: str | None) -> None:
    trunk = trunk or _first_trunk_with_cables(env)
    old, new, plan, _, _ = _relength(tmp_path, env, trunk)
    assert verify(plan, old, new) == []
    over = sorted(c.id for c in old.inv.cables if c.trunk == trunk)
    assert over and over == sorted(c.id for c in new.inv.cables if c.trunk == trunk)  # the cables stay
    mine = [s for s in plan.steps if s.phase == "trunks"]
    assert [s.subject for s in mine] == [trunk, trunk]
    pull, lay = mine
    assert pull.action.startswith(PULL_TRUNK) and not lay.action.startswith(PULL_TRUNK) and pull.n < lay.n
    assert lay.action.endswith(f"length_m {old.trunks[trunk].length_m:g} -> {new.trunks[trunk].length_m:g}")
    unplugs = {s.subject: s.n for s in plan.steps if s.phase == "unplug"}
    plugs = {s.subject: s.n for s in plan.steps if s.phase == "plug"}
    assert sorted(unplugs) == over and sorted(plugs) == over  # those cables, and no other
    assert max(unplugs.values()) < pull.n and lay.n < min(plugs.values())
    assert all(f"trunk {trunk} is re-laid" in s.action for s in plan.steps if s.phase == "unplug")
    # the hosts on those cables are out of service before the first unplug and back after the last plug
    hosts = sorted({e.device for c in old.inv.cables if c.trunk == trunk for e in (c.a, c.b)} & set(old.nodes))
    out = {s.subject: s.n for s in plan.steps if s.phase in ("drain", "takeout")}
    back = {s.subject: s.n for s in plan.steps if s.phase in ("resume", "return")}
    assert sorted(out) == hosts and sorted(back) == hosts
    assert all(n < min(unplugs.values()) for n in out.values())
    assert all(n > max(plugs.values()) for n in back.values())


def test_diff_plans_a_trunk_relaid_in_place(tmp_path: Path) -> None:
    trunk = _first_trunk_with_cables("staging")
    _, _, _, before, after = _relength(tmp_path, "staging", trunk)
    result = CliRunner().invoke(app, ["diff", str(before), str(after)])
    assert result.exit_code == 0, result.output
    assert "internal error" not in result.output and "re-lay the MPO-24 trunk" in result.output
