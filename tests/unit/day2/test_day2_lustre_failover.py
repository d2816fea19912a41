"""A Lustre server's targets through failover (issue #23): before a server goes out of service its failover
partner takes over its targets (`failover`, a manual step), and once it is back they return to it (`failback`).
The verifier's HA rule holds it: a server never goes out serving a target, a takeover only by a server in
service, every target back on its own server by the end. prod (20 servers in pairs, MDTs and OSTs) with its
DOCA-OFED bumped: every server is taken out once."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from clusterforge.api import load_checked
from clusterforge.day2 import ChangePlan, Step, change_plan
from clusterforge.day2.verify import verify
from clusterforge.model.index import Index
from clusterforge.model.services import target_name

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def bump(tmp_path_factory: pytest.TempPathFactory) -> tuple[Index, Index, ChangePlan]:
    new_env = tmp_path_factory.mktemp("prod") / "prod"
    shutil.copytree(ROOT / "inventories" / "prod", new_env)
    services = new_env / "services.yaml"
    services.write_text(services.read_text().replace("doca_ofed: 24.04-0.7.0.0", "doca_ofed: 24.10-1.1.4.0")
                        .replace("lustre_client: 2.15.5", "lustre_client: 2.15.6"))
    old, new = load_checked(ROOT / "inventories" / "prod").index, load_checked(new_env).index
    return old, new, change_plan(old, new, "inventories/prod", "prod")


def _with(plan: ChangePlan, steps: list[Step]) -> ChangePlan:
    return dataclasses.replace(plan, steps=tuple(dataclasses.replace(s, n=i + 1) for i, s in enumerate(steps)))


def _at(plan: ChangePlan, phase: str, subject: str) -> int:
    return next(i for i, s in enumerate(plan.steps) if (s.phase, s.subject) == (phase, subject))


def test_each_server_fails_over_before_it_goes_out_and_back_after(bump: tuple[Index, Index, ChangePlan]) -> None:
    old, new, plan = bump
    assert verify(plan, old, new) == []
    fs = old.inv.lustre[0]
    pairs = {a: b for a, b in fs.failover_pairs} | {b: a for a, b in fs.failover_pairs}
    servers = sorted({t.server for t in fs.targets})
    assert servers
    for srv in servers:
        out = _at(plan, "takeout", srv)
        over = _at(plan, "failover", pairs[srv])
        # the failover naming this server is the last one before its takeout
        assert over < out and srv in plan.steps[over].action and plan.steps[over].manual
        back = _at(plan, "return", srv)
        fb = _at(plan, "failback", srv)
        assert out < back < fb and plan.steps[fb].manual
    over = plan.steps[_at(plan, "failover", pairs[servers[0]])]
    mine = [target_name(fs, t) for t in fs.targets if t.server == servers[0]]
    assert mine and all(name in over.action for name in mine), (mine, over.action)


def test_a_server_taken_out_while_it_serves_its_targets_is_rejected(bump: tuple[Index, Index, ChangePlan]) -> None:
    old, new, plan = bump
    srv = old.inv.lustre[0].targets[0].server
    out = _at(plan, "takeout", srv)
    over = max(i for i, s in enumerate(plan.steps[:out]) if s.phase == "failover")
    found = verify(_with(plan, [s for i, s in enumerate(plan.steps) if i != over]), old, new)
    assert any(v.rule == "HA" and v.message.startswith(f"{srv} goes out while serving") for v in found), found


def test_targets_never_failed_back_and_a_takeover_by_a_server_out_are_rejected(
        bump: tuple[Index, Index, ChangePlan]) -> None:
    old, new, plan = bump
    srv = old.inv.lustre[0].targets[0].server
    fb = _at(plan, "failback", srv)
    found = verify(_with(plan, [s for i, s in enumerate(plan.steps) if i != fb]), old, new)
    assert any(v.rule == "HA" and "not back on their own server" in v.message and srv not in v.message.split(
        "(on ")[0] for v in found), found
    # the partner's own takeout moved before this server's failover: the takeover is by a server out of service
    partner = next(b if a == srv else a for a, b in old.inv.lustre[0].failover_pairs if srv in (a, b))
    steps = list(plan.steps)
    over = max(i for i, s in enumerate(steps[:_at(plan, "takeout", srv)]) if s.phase == "failover")
    found = verify(_with(plan, [*steps[:over], dataclasses.replace(steps[over], subject=srv), *steps[over + 1:]]),
                   old, new)
    assert any(v.rule == "HA" and v.message.startswith(f"{srv} takes over no target") for v in found), found
    assert partner != srv
