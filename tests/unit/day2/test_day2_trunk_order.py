"""MPO trunks come out before the patch panels they end at (issue #21, item 2).

Retiring the newest rack of staging (a rack of four nodes added with `plan --write`, which gave it its
own panel, a second panel in the core rack and three trunks between them, then taken away again): the
order is unplug -> pull the trunks -> take out panels and devices -> take out the rack. The verifier
rejects a plan that takes a panel out while a trunk is still laid to it, or moves a rack with one."""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

from typer.testing import CliRunner

from clusterforge.api import load_checked
from clusterforge.cli.main import app
from clusterforge.day2 import ChangePlan, Step, change_plan
from clusterforge.day2.verify import verify
from clusterforge.model.index import Index

ROOT = Path(__file__).resolve().parents[3]
RACK = "stag-su03-r01"


def _write(env: Path) -> None:
    result = CliRunner().invoke(app, ["plan", "show", str(env), "--write"])
    assert result.exit_code == 0, result.output


def _retired(tmp: Path) -> tuple[Index, Index, ChangePlan]:
    grown, retired = tmp / "grown", tmp / "retired"
    shutil.copytree(ROOT / "inventories" / "staging", grown)
    site, nodes = grown / "site.yaml", grown / "nodes.yaml"
    text = site.read_text(encoding="utf-8")
    last = re.findall(r"  - \{name: [^\n]*\n", text)[-1]
    site.write_text(text.replace(last, last + f"  - {{name: {RACK}, row: row-a, position: 10, cooling: air}}\n"),
                    encoding="utf-8")
    text = nodes.read_text(encoding="utf-8")
    anchor = re.findall(r"  - \{name: gpu\d+, [^\n]*\n", text)[-1]
    extra = "".join(f"  - {{name: gpu{33 + i:04d}, rack: {RACK}, u: {2 + 4 * i}, profile: gpu-node}}\n"
                    for i in range(4))
    nodes.write_text(text.replace(anchor, anchor + extra), encoding="utf-8")
    _write(grown)
    shutil.copytree(grown, retired)
    for path in (retired / "site.yaml", retired / "nodes.yaml"):
        path.write_text("".join(line for line in path.read_text(encoding="utf-8").splitlines(keepends=True)
                                if RACK not in line), encoding="utf-8")
    _write(retired)
    old, new = load_checked(grown).index, load_checked(retired).index
    return old, new, change_plan(old, new, str(retired), "staging")


def _with(plan: ChangePlan, steps: list[Step]) -> ChangePlan:
    return dataclasses.replace(plan, steps=tuple(dataclasses.replace(s, n=i + 1) for i, s in enumerate(steps)))


def test_retiring_the_newest_rack_pulls_its_trunks_before_its_panels_go(tmp_path: Path) -> None:
    old, new, plan = _retired(tmp_path)
    assert verify(plan, old, new) == []
    gone_panels = sorted({p.name for p in old.inv.patch_panels} - {p.name for p in new.inv.patch_panels})
    gone_trunks = sorted(set(old.trunks) - set(new.trunks))
    assert f"{RACK}-pp01" in gone_panels and len(gone_panels) == 2 and len(gone_trunks) == 3
    at = {(s.phase, s.subject): s.n for s in plan.steps}
    unplugs = [s.n for s in plan.steps if s.phase == "unplug"]
    pulls = [at[("trunks", t)] for t in gone_trunks]
    removes = [s.n for s in plan.steps if s.phase == "remove" and s.subject != RACK]
    assert all(plan.steps[n - 1].action.startswith("pull the MPO-24 trunk") for n in pulls)
    assert max(unplugs) < min(pulls) and max(pulls) < min(at[("remove", p)] for p in gone_panels)
    assert max(pulls) < min(removes) and max(removes) < at[("remove", RACK)]


def test_the_verifier_rejects_a_trunk_pulled_after_its_panel_is_gone(tmp_path: Path) -> None:
    old, new, plan = _retired(tmp_path)
    steps = list(plan.steps)
    pulls = [s for s in steps if s.phase == "trunks"]
    rest = [s for s in steps if s.phase != "trunks"]
    rack_out = next(i for i, s in enumerate(rest) if (s.phase, s.subject) == ("remove", RACK))
    bad = rest[:rack_out + 1] + pulls + rest[rack_out + 1:]  # the order before issue #21: panels, rack, trunks
    found = verify(_with(plan, bad), old, new)
    cable = [v for v in found if v.rule == "CABLE"]
    assert any(f"panel {RACK}-pp01 is taken out with trunk" in v.message for v in cable), found
    assert any("stag-core01-pp02 is taken out with trunk" in v.message for v in cable), found
    # and a trunk pulled twice (or never laid) is not pulled
    twice = verify(_with(plan, [*steps[:steps.index(pulls[0]) + 1], pulls[0], *steps[steps.index(pulls[0]) + 1:]]),
                   old, new)
    assert any(v.rule == "CABLE" and f"trunk {pulls[0].subject} is pulled but is not laid" in v.message
               for v in twice), twice
