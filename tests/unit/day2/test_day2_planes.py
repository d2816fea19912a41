"""Day 2 on a rail-plane fabric (issue #15): 32 GPU nodes added to staging with `planes: rail` (sized for
growth: max_sus) fill the free slots of the units the SM and Lustre nodes started and a new unit whose
leaves join each plane. Every existing cable stays where it is, every node cable lands on a leaf of its
rail's plane, every leaf's uplinks go to its plane's spines only, and the change plan (plug in, nothing
unplugged) passes the verifier."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from clusterforge.api import load_checked
from clusterforge.cli.main import app
from clusterforge.day2 import change_plan
from clusterforge.day2.verify import verify
from clusterforge.model.index import Index

ROOT = Path(__file__).resolve().parents[3]
SM_ONE = "      - {name: mlx5_0, model: ConnectX-6, netdev: ib0, rail: 0, ports: [{port: 1, rate: HDR}]}\n"
SM_TWO = SM_ONE + "      - {name: mlx5_1, model: ConnectX-6, netdev: ib1, rail: 1, ports: [{port: 1, rate: HDR}]}\n"


def _write_plan(env: Path) -> None:
    result = CliRunner().invoke(app, ["plan", "show", str(env), "--write"])
    assert result.exit_code == 0, result.output


def _base(tmp: Path) -> Path:
    env = tmp / "before" / "staging"
    shutil.copytree(ROOT / "inventories" / "staging", env)
    (env / "cabling.generated.yaml").unlink()
    fabric = env / "fabric.yaml"
    fabric.write_text(fabric.read_text().replace("  rails: 2\n", "  rails: 2\n  planes: rail\n  max_sus: 6\n"))
    hw = env / "hardware.yaml"
    text = hw.read_text()
    at = text.index(SM_ONE, text.index("  - name: sm-node"))
    hw.write_text(text[:at] + SM_TWO + text[at + len(SM_ONE):])
    _write_plan(env)
    return env


def _add_unit(old: Path, tmp: Path) -> Path:
    env = tmp / "after" / "staging"
    shutil.copytree(old, env)
    site = env / "site.yaml"
    racks = "".join(f"  - {{name: stag-su{u:02d}-{r}, row: row-a, position: {10 + 5 * (u - 3) + i}, cooling: air}}\n"
                    for u in (3, 4) for i, r in enumerate(("net", "r01", "r02", "r03", "r04")))
    text = site.read_text()
    at = text.index("  - {name: stag-core01")
    site.write_text(text[:at] + racks + text[at:])
    nodes = "".join(f"  - {{name: gpu{33 + k:04d}, rack: stag-su{3 + k // 16:02d}-r{k % 16 // 4 + 1:02d}, "
                    f"u: {2 + 4 * (k % 4)}, profile: gpu-node}}\n" for k in range(32))
    (env / "nodes.yaml").write_text((env / "nodes.yaml").read_text() + nodes)
    _write_plan(env)
    return env


def _plane_of_switch(index: Index) -> dict[str, int]:
    rpp = index.inv.fabric.rails_per_plane if index.inv.fabric else None
    assert rpp == 1
    return {s.name: s.rail if s.role == "leaf" else s.group for s in index.inv.switches  # type: ignore[misc]
            if s.role in ("leaf", "spine")}


def test_adding_a_unit_keeps_every_plane_intact(tmp_path: Path) -> None:
    old_env = _base(tmp_path)
    new_env = _add_unit(old_env, tmp_path)
    a, b = load_checked(old_env).index, load_checked(new_env).index
    # existing cables untouched: same ids, same ends
    before = {c.id: (str(c.a), str(c.b)) for c in a.inv.cables}
    after = {c.id: (str(c.a), str(c.b)) for c in b.inv.cables}
    assert {cid: after.get(cid) for cid in before} == before
    added = set(after) - set(before)
    new_leaves = {s.name for s in b.inv.switches} - {s.name for s in a.inv.switches}
    assert new_leaves == {"leaf-su05-r0", "leaf-su05-r1"}  # a new unit: a leaf in each plane
    uplinks = {cid for cid in added if all(not str(e).startswith("gpu") for e in after[cid])}
    assert len(added) - len(uplinks) == 32 * 2  # every new node's two rails
    assert uplinks and {after[cid][0].split("/")[0] for cid in uplinks} == new_leaves
    # no cable crosses planes: a node's rail-r port on a leaf of plane r, a leaf's uplinks on its plane's spines
    plane = _plane_of_switch(b)
    for c in b.inv.cables:
        ends = (c.a, c.b)
        hca = next((e for e in ends if e.hca is not None), None)
        if hca is not None:
            sw = next(e for e in ends if e is not hca)
            rail = b.hca(hca.device, hca.hca).rail  # type: ignore[union-attr, arg-type]
            assert plane[sw.device] == rail, c.id
        elif all(e.device in plane for e in ends):
            assert plane[c.a.device] == plane[c.b.device], c.id
    # the day-2 plan: plug the new unit in, unplug nothing, and it verifies
    plan = change_plan(a, b, str(new_env), "staging")
    assert verify(plan, a, b) == []
    assert not [s for s in plan.steps if s.phase in ("unplug", "drain", "takeout")]
    plugged = [s for s in plan.steps if s.phase == "plug"]
    assert {s.subject for s in plugged} == added  # exactly the new cables, each plugged once
