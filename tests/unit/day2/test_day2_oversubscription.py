"""An oversubscription change on a built fabric (issue #21, item 1): every kept link stays on its two
ports; fewer uplinks only remove (uplinks, spines, trunks, panels), more only add.

Each step between 1:1, 2:1 and 4:1, both ways, on copies of staging and prod, the way a user works:
the environment at the first ratio (reached from the committed 1:1 fabric with `plan --write`), the
ratio edited, `plan --write` again (re-planned against the frozen as-built cabling), `diff`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.api import load_checked
from clusterforge.cli.main import app
from clusterforge.day2 import change_plan
from clusterforge.day2.verify import verify
from clusterforge.model.cabling import Cable
from clusterforge.model.inventory import Inventory

ROOT = Path(__file__).resolve().parents[3]
RATIOS = ("1:1", "2:1", "4:1")
STEPS = [(a, b) for a in RATIOS for b in RATIOS if a != b]


def _at_ratio(src: Path, dst: Path, ratio: str) -> Path:
    """A copy of `src` with its oversubscription set to `ratio` and re-planned (`plan --write`)."""
    shutil.copytree(src, dst)
    spec = dst / "fabric.yaml"
    text = spec.read_text(encoding="utf-8")
    old = next(f'oversubscription: "{r}"' for r in RATIOS if f'oversubscription: "{r}"' in text)
    spec.write_text(text.replace(old, f'oversubscription: "{ratio}"'), encoding="utf-8")
    result = CliRunner().invoke(app, ["plan", "show", str(dst), "--write"])
    assert result.exit_code == 0, result.output
    return dst


def _generated(inv: Inventory) -> tuple[dict[str, Cable], dict[str, tuple[str, str, int]], set[str], set[str]]:
    cables = {c.id: c for c in inv.cables if c.generated}
    ends = {ref.device for c in cables.values() for ref in (c.a, c.b) if ref.hca is None}
    switches = {s.name: (s.model, s.rack, s.u) for s in inv.switches if s.name in ends}
    return cables, switches, {t.id for t in inv.trunks}, {p.name for p in inv.patch_panels}


def _at_port(cables: dict[str, Cable]) -> dict[tuple[str, str | None, int], Cable]:
    return {ref.key: c for c in cables.values() for ref in (c.a, c.b)}


@pytest.mark.parametrize("env", ["staging", "prod"])
@pytest.mark.parametrize(("before", "after"), STEPS, ids=[f"{a}-to-{b}" for a, b in STEPS])
def test_an_oversubscription_step_keeps_every_kept_link_on_its_ports(tmp_path: Path, env: str, before: str,
                                                                     after: str) -> None:
    old_env = _at_ratio(ROOT / "inventories" / env, tmp_path / "old", before)
    new_env = _at_ratio(old_env, tmp_path / "new", after)
    a, b = load_checked(old_env).index, load_checked(new_env).index
    old_cables, old_sw, old_trunks, old_panels = _generated(a.inv)
    new_cables, new_sw, new_trunks, new_panels = _generated(b.inv)
    # a port cabled on both sides is cabled to the same far end by the same cable (id, run, trunk, lane)
    old_port, new_port = _at_port(old_cables), _at_port(new_cables)
    moved = {old_port[k].id: f"{old_port[k].a} - {old_port[k].b} -> {c.a} - {c.b}"
             for k, c in new_port.items() if k in old_port and old_port[k] != c}
    assert moved == {}, f"{len(moved)} live link(s) disturbed: {sorted(moved.items())[:4]}"
    # the direction of the change: fewer uplinks only remove, more only add (switches stay where they are)
    smaller, larger = (new_cables, old_cables) if RATIOS.index(after) > RATIOS.index(before) else \
        (old_cables, new_cables)
    assert set(smaller) < set(larger)
    assert all(smaller[i] == larger[i] for i in smaller)
    if smaller is new_cables:
        assert new_sw.items() <= old_sw.items() and new_trunks <= old_trunks and new_panels <= old_panels
        roles = {s.name: s.role for s in a.inv.switches}
        assert {roles[n] for n in set(old_sw) - set(new_sw)} <= {"spine"}  # the spines that go, if any
    else:
        assert old_sw.items() <= new_sw.items() and old_trunks <= new_trunks and old_panels <= new_panels
    # no node link changes, and the change plan (proven by the verifier) adds or removes only, draining no one
    assert all(c.a.hca is None and c.b.hca is None for c in larger.values() if c.id not in smaller)
    plan = change_plan(a, b, str(new_env), env)
    assert verify(plan, a, b) == []
    want = "removed" if smaller is new_cables else "added"
    assert {c.change for c in plan.diff.cables} == {want}
    assert len(plan.diff.cables) == len(larger) - len(smaller)
    assert {d.change for d in plan.diff.devices} <= {want}
    assert not plan.drained
