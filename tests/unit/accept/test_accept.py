"""clusterforge accept: the plan's coverage, the bounds from the model, the judge naming the slow part, bisection.

Run directories are built from real captures (tests/fixtures: A100 dcgmi diag, nvidia-smi nvlink and
single-node all_reduce, an 8 x H100 nvidia-smi -q, the NDR ib_write_bw); where a test needs another value
(a slow link, a slow all_reduce) the number in that capture is replaced: a CONSTRUCTED input, marked so here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cf_accept_runs import FIX, run_dir
from clusterforge.accept.bisect import bisect, halves_plan
from clusterforge.accept.expect import expect
from clusterforge.accept.judge import judge
from clusterforge.accept.plan import AcceptPlan, accept_plan
from clusterforge.api import Checked, load_checked
from clusterforge.cli.main import app

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def lab() -> Checked:
    return load_checked(ROOT / "inventories" / "lab")


@pytest.fixture(scope="module")
def prod() -> Checked:
    return load_checked(ROOT / "inventories" / "prod")


def _coverage(plan: AcceptPlan) -> None:
    cables = {p.cable for p in plan.ports}
    crossed = {c for t in plan.links for c in (t.client.cable, t.server.cable)}
    assert crossed == cables  # every node-leaf cable at least once
    for r in range(1, plan.rounds + 1):
        used = [p for t in plan.links if t.round == r for p in (t.client, t.server)]
        assert len(used) == len(set(used)), f"round {r} loads a port twice"
        listening = [(t.server.node, t.tcp_port) for t in plan.links if t.round == r]
        assert len(listening) == len(set(listening)), f"round {r}: two ib_write_bw servers on one TCP port"
        for t in plan.links:
            server, client = t.argv("addr")
            assert server[server.index("-p") + 1] == client[client.index("-p") + 1] == str(t.tcp_port)
    tests_of: dict[object, int] = {}
    for t in plan.links:
        for p in (t.client, t.server):
            tests_of[p] = tests_of.get(p, 0) + 1
    assert all(n >= 2 for n in tests_of.values())  # every port twice: a slow one is told from its partner
    for leaf, up in plan.uplinks.items():
        dests = {t.server for t in plan.links if t.cross_leaf and leaf in (t.client.leaf, t.server.leaf)}
        hosts = sum(1 for p in plan.ports if p.leaf == leaf)
        assert len(dests) >= min(up, hosts), f"{leaf}: {len(dests)} destinations across its {up} uplinks"


def test_the_plan_covers_every_cable_and_uplink_on_prod(prod: Checked) -> None:
    plan = accept_plan(prod.index)
    assert len(plan.nodes) == 256 and plan.uplinks and set(plan.uplinks.values()) == {20}
    _coverage(plan)
    assert plan.rounds <= 8
    names = [f.name for f in plan.fabric]
    assert names[-1] == "cluster" and "su01" in names and len(plan.fabric[-1].nodes) == 256


def test_the_plan_covers_the_lab(lab: Checked) -> None:
    _coverage(accept_plan(lab.index))


def test_bounds_come_from_the_model(lab: Checked) -> None:
    exp = expect(lab.index)
    assert exp.link_gbps["gpu01/mlx5_0/1"] == 180.0  # 0.90 x HDR 200 Gb/s
    assert exp.node_net_gbs["gpu01"] == 50.0  # two HDR rails, GB/s
    assert exp.nvlink_busbw_gbs["gpu01"] == 195.0  # 0.65 x 12 NVLink 3 links x 25 GB/s
    assert exp.pcie_gen["gpu01"] == 4
    assert exp.fabric_busbw_gbs(("gpu01", "gpu02"), 0.8) == 40.0


def test_a_clean_run_has_no_finding(lab: Checked, tmp_path: Path) -> None:
    plan = accept_plan(lab.index)
    judged = judge(lab.index, run_dir(tmp_path, plan), plan)
    assert judged.findings == []
    assert judged.tests_run == judged.tests_planned


def test_one_degraded_cable_is_named_and_only_it(lab: Checked, tmp_path: Path) -> None:
    plan = accept_plan(lab.index)
    victim = plan.ports[3]
    judged = judge(lab.index, run_dir(tmp_path, plan, slow_cable=victim.cable), plan)
    assert [(f.rule, f.subject) for f in judged.findings] == [("ACC-LINK", victim.label)]
    (f,) = judged.findings
    assert f.floor == f"cable {victim.cable} to {victim.leaf}/{victim.leaf_port}"
    assert f.observed is not None and "98.4 Gb/s" in f.observed and f.expected == ">= 180 Gb/s (HDR)"


def test_missing_outputs_are_findings_never_a_pass(lab: Checked, tmp_path: Path) -> None:
    plan = accept_plan(lab.index)
    d = run_dir(tmp_path, plan)
    (d / "nodes" / "gpu03" / "nvidia-smi-nvlink").unlink()
    (d / "links" / plan.links[0].name).unlink()
    shutil.rmtree(d / "nccl")
    rules = sorted((f.rule, f.subject) for f in judge(lab.index, d, plan).findings)
    assert ("ACC-NO-DATA", "gpu03") in rules
    assert ("ACC-NO-DATA", f"{plan.links[0].client.label} -> {plan.links[0].server.label}") in rules
    assert ("ACC-NO-DATA", "nccl cluster") in rules


def test_a_slow_fabric_gets_a_bisection_plan(lab: Checked, tmp_path: Path) -> None:
    plan = accept_plan(lab.index)
    judged = judge(lab.index, run_dir(tmp_path, plan, fabric_busbw=12.5), plan)
    slow = [f for f in judged.findings if f.rule == "ACC-NCCL-FABRIC"]
    assert {f.subject for f in slow} == {f"nccl {t.name}" for t in plan.fabric}
    cluster = next(f for f in slow if f.subject == "nccl cluster")
    assert cluster.expected == ">= 40 GB/s bus bandwidth" and cluster.observed == "12.5 GB/s (ok)"
    assert "round 1: 4 + 4 nodes; round 2: 2 + 2 nodes; round 3: 1 + 1 nodes" in cluster.action


def test_real_failures_in_node_outputs(lab: Checked, tmp_path: Path) -> None:
    plan = accept_plan(lab.index)
    d = run_dir(tmp_path, plan)
    shutil.copy(FIX / "dcgmi-diag" / "azure-nd-h200-v5-8xh200-dcgm3.1.8-r1-persistence-mode-fail-wrapped-error.txt",
                d / "nodes" / "gpu02" / "dcgmi-diag")
    shutil.copy(FIX / "nvidia-smi-nvlink-status" / "nvutil-rtx2080s-595.71.05-links-inactive.txt",
                d / "nodes" / "gpu05" / "nvidia-smi-nvlink")
    shutil.copy(FIX / "nvidia-smi-q" / "gpud-1xtitanv-560.35.03.txt", d / "nodes" / "gpu06" / "nvidia-smi-q")
    found = {(f.rule, f.subject.split(" ")[0]) for f in judge(lab.index, d, plan).findings}
    assert found == {("ACC-DCGM", "gpu02"), ("ACC-NVLINK", "gpu05"), ("ACC-PCIE", "gpu06")}


def test_bisection_finds_one_slow_node_of_64_in_7_rounds() -> None:
    nodes = [f"gpu{i:04d}" for i in range(1, 65)]
    for culprit in nodes:
        res = bisect(nodes, lambda s, c=culprit: c in s, confirm=lambda n, c=culprit: n == c)
        assert res.suspect == (culprit,) and not res.between_halves and res.rounds <= 7
    assert len(halves_plan(nodes)) == 6


def test_bisection_says_when_the_slow_part_is_between_the_halves() -> None:
    nodes = [f"n{i}" for i in range(16)]
    res = bisect(nodes, lambda s: len(s) == 16)  # the whole set slow, each half fast: an uplink or a spine
    assert res.between_halves and res.suspect == tuple(nodes) and res.rounds == 1


def test_cli_plan_and_from(lab: Checked, tmp_path: Path) -> None:
    env = ROOT / "inventories" / "lab"
    result = CliRunner().invoke(app, ["accept", str(env), "--plan", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["coverage"]["cables"] == doc["coverage"]["cables_crossed"] > 0
    assert doc["links"][0]["client_argv"][0] == "ib_write_bw"
    plan = accept_plan(lab.index)
    d = run_dir(tmp_path, plan, slow_cable=plan.ports[0].cable)
    result = CliRunner().invoke(app, ["accept", str(env), "--from", str(d), "--format", "json"])
    assert result.exit_code == 4, result.output
    findings = json.loads(result.stdout)["findings"]
    assert [f["rule"] for f in findings] == ["ACC-LINK"]
    clean = run_dir(tmp_path / "clean", plan)
    result = CliRunner().invoke(app, ["accept", str(env), "--from", str(clean)])
    assert result.exit_code == 0 and "passed" in result.output
