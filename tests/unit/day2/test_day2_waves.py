"""Day-2 in waves at scale (issue #26, item 4): each wave's deploy is one `deploy --limit <the wave's hosts
as a hostlist>` per set of components, not one call per rack. On the generated 2,048-node inventory
(bench/gen_inventory.py: 512 racks of 4 GPU nodes, sm01/sm02): an NCCL bump is one wave of at most 10
steps with every node deployed exactly once; an OFED bump (it restarts the InfiniBand stack: drained)
still goes in waves within `deploy.max_drain`, the subnet managers one at a time; the verifier reads a
wave's `--limit` as the deploy does, and rejects a deploy that takes both SMs at once."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from clusterforge.day2 import ChangePlan, change_plan
from clusterforge.day2.steps import Step
from clusterforge.day2.verify import verify
from clusterforge.inventory.load import load_inventory
from clusterforge.inventory.selection import select_nodes, split_tokens
from clusterforge.model import Inventory
from clusterforge.model.index import Index
from clusterforge.util.hostlist import compress, expand

ROOT = Path(__file__).resolve().parents[3]
NODES = 2048


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Index, dict[str, Any]]:
    env = tmp_path_factory.mktemp("waves") / "bench"
    subprocess.run([sys.executable, str(ROOT / "bench" / "gen_inventory.py"), "bench", str(env),
                    "--nodes", str(NODES)], check=True, capture_output=True)
    index = Index(load_inventory(env)[0])
    return index, index.inv.model_dump(mode="json")


def _bumped(data: dict[str, Any], **software: str) -> Index:
    new = {**data, "software": {**data["software"], **software}}
    return Index(Inventory.model_validate(new))


def _limit(step: Step) -> str:
    return step.argv[step.argv.index("--limit") + 1]


def _deployed(plan: ChangePlan, new: Index) -> Counter[str]:
    """How often each host is deployed, its `--limit` read as the deploy reads it."""
    return Counter(h for s in plan.steps if s.phase == "deploy"
                   for h in select_nodes(new, split_tokens([_limit(s)])))


@pytest.fixture(scope="module")
def nccl(big: tuple[Index, dict[str, Any]]) -> tuple[Index, Index, ChangePlan]:
    old, data = big
    new = _bumped(data, nccl="2.22.3-1")
    return old, new, change_plan(old, new, "bench", "bench")


@pytest.fixture(scope="module")
def ofed(big: tuple[Index, dict[str, Any]]) -> tuple[Index, Index, ChangePlan]:
    old, data = big
    new = _bumped(data, doca_ofed="23.10-2.1.3.1")
    return old, new, change_plan(old, new, "bench", "bench")


def test_nccl_bump_on_2048_nodes_is_one_wave_of_few_steps(nccl: tuple[Index, Index, ChangePlan]) -> None:
    old, new, plan = nccl
    assert verify(plan, old, new) == []
    assert plan.drained == () and plan.warnings == ()
    assert len(plan.steps) <= 10, [(s.phase, s.subject) for s in plan.steps]
    assert [s.phase for s in plan.steps] == ["deploy", "validate"]
    [deploy] = [s for s in plan.steps if s.phase == "deploy"]
    assert _limit(deploy) == f"gpu[00001-{NODES:05d}]"  # compact: one range for the whole wave
    assert deploy.argv[-4:] == ("--component", "repo", "--component", "nccl")
    gpus = {n.name for n in new.inv.nodes if n.role == "compute"}
    assert len(gpus) == NODES
    counts = _deployed(plan, new)
    assert set(counts) == {h.host for h in plan.hosts} == gpus  # every changed node, none else ...
    assert set(counts.values()) == {1}  # ... exactly once


def _waves(plan: ChangePlan) -> list[list[Step]]:
    """The plan cut after each validate step (a wave ends with its validation, then its resumes)."""
    out: list[list[Step]] = [[]]
    for s in plan.steps:
        if s.phase in ("drain", "takeout", "handover") and any(x.phase == "validate" for x in out[-1]):
            out.append([])
        out[-1].append(s)
    return out


def test_ofed_bump_on_2048_nodes_goes_in_waves_within_the_caps(ofed: tuple[Index, Index, ChangePlan]) -> None:
    old, new, plan = ofed
    assert verify(plan, old, new) == []
    changed = {h.host for h in plan.hosts}
    assert len(plan.drained) == len(changed) == NODES + 2  # every GPU node and both SMs: the IB stack restarts
    cap = NODES * 25 // 100  # max_drain's default: 25 % of the cluster's compute
    waves = _waves(plan)
    assert len(waves) == NODES // cap  # as few waves as the cap allows
    out: set[str] = set()
    most = 0
    for s in plan.steps:  # compute out at once never above the cap; the two SMs never out together
        if s.phase in ("drain", "takeout"):  # a drain through Slurm's `{hosts}` hook names a hostlist
            out.update(expand(s.subject))
        elif s.phase in ("resume", "return"):
            out.difference_update(expand(s.subject))
        most = max(most, len(out - {"sm01", "sm02"}))
        assert not {"sm01", "sm02"} <= out
    assert most == cap
    for wave in waves:  # one deploy per set of components, over every host of the wave
        deploys = [s for s in wave if s.phase == "deploy"]
        comps = [s.argv[s.argv.index("--limit") + 2:] for s in deploys]
        assert len(comps) == len(set(comps)) and len(deploys) <= 2
        took = {h for s in wave if s.phase in ("drain", "takeout") for h in expand(s.subject)}
        assert {h for s in deploys for h in expand(_limit(s))} == took
    sm_waves = [i for i, w in enumerate(waves) for s in w if s.phase == "takeout" and s.subject.startswith("sm")]
    assert len(sm_waves) == 2 and sm_waves[0] != sm_waves[1]
    counts = _deployed(plan, new)
    assert set(counts) == changed and set(counts.values()) == {1}
    assert len([s for s in plan.steps if s.phase == "deploy"]) <= 2 * len(waves)


def _with(plan: ChangePlan, steps: list[Step]) -> ChangePlan:
    return dataclasses.replace(plan, steps=tuple(dataclasses.replace(s, n=i + 1) for i, s in enumerate(steps)))


def _relimit(step: Step, hosts: list[str]) -> Step:
    argv = list(step.argv)
    argv[argv.index("--limit") + 1] = compress(hosts)
    return dataclasses.replace(step, argv=tuple(argv))


def test_the_verifier_rejects_a_wave_deploy_of_both_sms(ofed: tuple[Index, Index, ChangePlan]) -> None:
    old, new, plan = ofed
    steps = list(plan.steps)
    deploys = {i: expand(_limit(s)) for i, s in enumerate(steps) if s.phase == "deploy"}
    [first] = [i for i, hosts in deploys.items() if "sm01" in hosts]
    [second] = [i for i, hosts in deploys.items() if "sm02" in hosts]
    # one deploy restarts both SMs' InfiniBand stacks (sm02 still in service): DRAIN
    bad = list(steps)
    bad[first] = _relimit(steps[first], [*deploys[first], "sm02"])
    bad[second] = _relimit(steps[second], [h for h in deploys[second] if h != "sm02"])
    violations = verify(_with(plan, bad), old, new)
    assert any(v.rule == "DRAIN" and "sm02 gets a disruptive change while in service" in v.message
               for v in violations), violations
    # and with sm02 taken out for it too: both SMs out at once is HA
    takeout = next(s for s in steps if s.phase == "takeout" and s.subject == "sm02")
    bad.insert(first, takeout)
    violations = verify(_with(plan, bad), old, new)
    assert any(v.rule == "HA" and "sm02" in v.message for v in violations), violations


def test_the_verifier_reads_a_wave_limit_as_the_deploy_does(nccl: tuple[Index, Index, ChangePlan]) -> None:
    old, new, plan = nccl
    [deploy, validate] = plan.steps
    # a range that leaves one node out: never deployed (END); one past the inventory: PHASE
    short = _relimit(deploy, [f"gpu{i:05d}" for i in range(1, NODES)])
    assert any(v.rule == "END" and f"gpu{NODES:05d}" in v.message for v in verify(_with(plan, [short, validate]),
                                                                                    old, new))
    past = list(deploy.argv)
    past[past.index("--limit") + 1] = f"gpu[00001-{NODES + 1:05d}]"
    bad = dataclasses.replace(deploy, argv=tuple(past))
    assert any(v.rule == "PHASE" and f"gpu{NODES + 1:05d}" in v.message
               for v in verify(_with(plan, [bad, validate]), old, new))
    # racks name the same hosts as the range: proven alike
    racks = sorted({n.rack for n in new.inv.nodes if n.role == "compute"})
    by_rack = list(deploy.argv)
    by_rack[by_rack.index("--limit") + 1] = ",".join(racks)
    assert verify(_with(plan, [dataclasses.replace(deploy, argv=tuple(by_rack)), validate]), old, new) == []


def _pinned(data: dict[str, Any], version: str) -> Index:
    return Index(Inventory.model_validate({**data, "firmware": {"hcas": [{"model": "ConnectX-7", "version": version,
                                                                           "image": "fw-cx7.bin"}]}}))


def test_a_fleet_wide_hca_firmware_bump_on_2048_nodes_goes_in_waves(big: tuple[Index, dict[str, Any]]) -> None:
    """Issue #24 item 3 at scale: every node with a ConnectX-7 flashed once, in the waves of an OFED bump (within
    the caps, the SMs apart), one flash, one activation and one validation per wave; the verifier proves it."""
    _, data = big
    old, new = _pinned(data, "28.43.1014"), _pinned(data, "28.44.1000")
    plan = change_plan(old, new, "bench", "bench")
    assert verify(plan, old, new) == []
    flashes = [s for s in plan.steps if s.phase == "flash"]
    flashed = Counter(h for s in flashes for h in expand(_limit(s)))
    with_cx7 = {n for n, hw in new.hardware.items() if any(h.model == "ConnectX-7" for h in hw.hcas)}
    assert set(flashed) == with_cx7 and set(flashed.values()) == {1}
    compute = sum(1 for n in new.inv.nodes if n.role == "compute")
    cap = compute * new.inv.deploy.max_drain.cluster_percent // 100
    assert len(flashes) >= -(-compute // cap)  # at least as many waves as the cap needs
    for s in flashes:
        assert sum(1 for h in expand(_limit(s)) if new.nodes[h].role == "compute") <= cap
        assert sum(1 for h in expand(_limit(s)) if h in {"sm01", "sm02"}) <= 1
    phases = Counter(s.phase for s in plan.steps)
    assert phases["activate"] == phases["validate"] == len(flashes)
