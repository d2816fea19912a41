"""Drain and resume hooks that take a group (`{hosts}`, model/hooks.py): one call a wave, not one a host.

At 2,048 nodes an OFED bump drains every GPU node in waves of 512; with `scontrol update nodename={host}`
that is 512 drain steps and 512 resume steps a wave (with no hook at all, 512 hosts the operator takes out by
hand). With `nodename={hosts}` each wave drains its compute in one step and resumes it in one, the verifier
still replays each host (caps, subnet managers, validation before resume) and checks that a hook step's
command is the inventory's hook for exactly the hosts it names (HOOK)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from clusterforge.day2 import ChangePlan, change_plan
from clusterforge.day2.verify import verify
from clusterforge.inventory.load import load_inventory
from clusterforge.model import Inventory
from clusterforge.model.hooks import DAY2_REASON, hook_argv, hook_calls, takes_many
from clusterforge.model.index import Index
from clusterforge.model.inventory import RebootPolicy
from clusterforge.util.hostlist import expand

ROOT = Path(__file__).resolve().parents[3]
NODES = 2048
DRAIN_ONE = ["scontrol", "update", "nodename={host}", "state=drain", "reason=clusterforge"]
DRAIN_MANY = ["scontrol", "update", "nodename={hosts}", "state=drain", "reason=clusterforge"]
DRAIN_WHY = ["scontrol", "update", "nodename={hosts}", "state=drain", "reason={reason}"]
RESUME_MANY = ["scontrol", "update", "nodename={hosts}", "state=resume"]


def test_hook_calls() -> None:
    hosts = ["gpu0001", "gpu0002", "gpu0003", "gpu0007", "sm01"]
    assert hook_calls(DRAIN_MANY, hosts, "x") == [(tuple(hosts), ("scontrol", "update",
                                                                  "nodename=gpu[0001-0003,0007],sm01",
                                                                  "state=drain", "reason=clusterforge"))]
    one = hook_calls(DRAIN_ONE, hosts[:2], "x")
    assert [c[0] for c in one] == [("gpu0001",), ("gpu0002",)] and one[1][1][2] == "nodename=gpu0002"
    assert hook_calls([], hosts, "x") == [] and hook_calls(DRAIN_MANY, [], "x") == []
    assert takes_many(DRAIN_MANY) and not takes_many(DRAIN_ONE)
    assert hook_argv(DRAIN_MANY, "gpu0001")[2] == hook_argv(DRAIN_ONE, "gpu0001")[2] == "nodename=gpu0001"


def test_the_reason_is_filled_once() -> None:
    (_, argv), = hook_calls(DRAIN_WHY, ["gpu01", "gpu02"], DAY2_REASON)
    assert argv[-1] == f"reason={DAY2_REASON}" and argv[2] == "nodename=gpu[01-02]"
    # left for the node to fill in (the health check), then filled; text that looks like a placeholder
    # in a host name or a reason is data, never substituted again
    later = hook_argv(DRAIN_WHY, "gpu01")
    assert later[-1] == "reason={reason}"
    assert hook_argv(DRAIN_WHY, "gpu01", "cf-health: {hosts} odd") == [*later[:-1], "reason=cf-health: {hosts} odd"]
    assert hook_argv(DRAIN_WHY, "gpu01", "why {host}")[-1] == "reason=why {host}"


def test_a_hook_naming_both_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"names both \{host\}.*and \{hosts\}"):
        RebootPolicy(drain=["sh", "-c", "drain {host}", "{hosts}"])
    RebootPolicy(drain=DRAIN_MANY, resume=["notify", "{host}"])  # each hook on its own: fine


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    env = tmp_path_factory.mktemp("hooks") / "bench"
    subprocess.run([sys.executable, str(ROOT / "bench" / "gen_inventory.py"), "bench", str(env),
                    "--nodes", str(NODES)], check=True, capture_output=True)
    return Index(load_inventory(env)[0]).inv.model_dump(mode="json")


def _ofed_plan(data: dict[str, Any], drain: list[str], resume: list[str]) -> tuple[Index, Index, ChangePlan]:
    deploy = {**data["deploy"], "reboot": {**data["deploy"]["reboot"], "drain": drain, "resume": resume}}
    old = Index(Inventory.model_validate({**data, "deploy": deploy}))
    new = Index(Inventory.model_validate({**data, "deploy": deploy,
                                          "software": {**data["software"], "doca_ofed": "23.10-2.1.3.1"}}))
    return old, new, change_plan(old, new, "bench", "bench")


def test_an_ofed_bump_drains_each_wave_in_one_call(big: dict[str, Any]) -> None:
    old, new, plan = _ofed_plan(big, DRAIN_MANY, RESUME_MANY)
    assert verify(plan, old, new) == []
    drains = [s for s in plan.steps if s.phase == "drain"]
    resumes = [s for s in plan.steps if s.phase == "resume"]
    cap = NODES * new.inv.deploy.max_drain.cluster_percent // 100
    assert len(drains) == len(resumes) == NODES // cap  # one each a wave
    gpus = sorted(n.name for n in new.inv.nodes if n.role == "compute")
    assert sorted(h for s in drains for h in expand(s.subject)) == gpus  # every GPU node once
    assert sorted(h for s in resumes for h in expand(s.subject)) == gpus
    for s in drains:
        assert s.argv[2] == f"nodename={s.subject}" and len(expand(s.subject)) == cap
        assert s.group is None  # one call: nothing to run beside it
    # the subnet managers still go one at a time, by hand (they have a handover, not a hook)
    assert sorted(s.subject for s in plan.steps if s.phase == "takeout") == ["sm01", "sm02"]
    # against one call a host: the same waves, far fewer steps
    old1, new1, per_host = _ofed_plan(big, DRAIN_ONE, [])
    assert verify(per_host, old1, new1) == []
    assert len([s for s in per_host.steps if s.phase == "drain"]) == NODES
    assert len(plan.steps) < 40 < len(per_host.steps)


def test_the_verifier_checks_a_group_hook(big: dict[str, Any]) -> None:
    old, new, plan = _ofed_plan(big, DRAIN_MANY, RESUME_MANY)
    steps = list(plan.steps)
    i = next(i for i, s in enumerate(steps) if s.phase == "drain")
    first = expand(steps[i].subject)

    def with_step(step: Any) -> list[str]:
        doctored = dataclasses.replace(plan, steps=(*steps[:i], step, *steps[i + 1:]))
        return [f"{v.rule}: {v.message}" for v in verify(doctored, old, new)]

    # the command drains other hosts than the step says
    argv = list(steps[i].argv)
    argv[2] = "nodename=gpu[00001-00004]"
    found = with_step(dataclasses.replace(steps[i], argv=tuple(argv)))
    assert any(f.startswith("HOOK: drain of ") and "not the inventory's deploy.reboot.drain hook" in f
               for f in found), found
    # the step names fewer hosts than the wave takes out: the rest are unplugged/deployed while in service
    (_, one_argv), = hook_calls(DRAIN_MANY, first[:1], DAY2_REASON)
    fewer = dataclasses.replace(steps[i], subject=first[0], argv=one_argv)
    assert any(f.startswith("DRAIN:") for f in with_step(fewer))
    # a subject that is no hostlist
    found = with_step(dataclasses.replace(steps[i], subject="gpu[00001-"))
    assert any(f.startswith("HOOK: drain of 'gpu[00001-'") for f in found), found
