"""The lab's acceptance stand-ins (lab/accept_standins.py): real captures with figures from the lab's fabric,
judged by `accept` as a real run is. The rates given here are what `lab accept` reads from ibnetdiscover."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.accept.judge import judge
from clusterforge.accept.plan import AcceptPlan, accept_plan
from clusterforge.api import Checked, load_checked
from clusterforge.lab.accept_standins import AcceptFaults, all_reduce, ib_write_bw, link_gbps, nvidia_smi_q, outputs
from clusterforge.parse import nccl_tests, perftest
from clusterforge.parse import nvidia_smi_q as smi_q

ROOT = Path(__file__).resolve().parents[3]
FIX = ROOT / "tests" / "fixtures"
CAPTURES = ROOT / "src" / "clusterforge" / "lab" / "captures"


@pytest.fixture(scope="module")
def lab() -> Checked:
    return load_checked(ROOT / "inventories" / "lab")


def _write(tmp: Path, texts: dict[str, str]) -> Path:
    d = tmp / "run"
    for rel, text in texts.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(text)
    return d


def _rates(plan: AcceptPlan, **slow: float | None) -> dict[str, float | None]:
    return {p.label: slow.get(p.cable, 200.0) for p in plan.ports}


def test_the_captures_are_the_fixtures_they_name() -> None:
    for txt in sorted(CAPTURES.glob("*.txt")):
        src = txt.with_suffix(".source").read_text()
        assert any((FIX / d / f"{f.stem}.source").read_text() == src
                   and (FIX / d / f.name).read_text() == txt.read_text()
                   for d in ("perftest", "dcgmi-diag", "nvidia-smi-q", "nvidia-smi-nvlink-status", "nccl-tests")
                   for f in (FIX / d).glob("*.txt")), f"{txt.name} is no fixture"


def test_the_stand_ins_parse_as_the_real_tools_output() -> None:
    bw = perftest.parse(ib_write_bw("mlx5_1", 200.0))
    assert bw.rows[-1].values["BW average"] == pytest.approx(196.17, abs=0.01)
    assert "Device         : mlx5_1" in ib_write_bw("mlx5_1", 200.0)
    res = nccl_tests.parse(all_reduce(46.0))
    assert res.status == "ok" and res.avg_busbw == pytest.approx(46.0)
    gpus = smi_q.parse(nvidia_smi_q({3: 3})).gpus
    assert [g.pcie.gen_current if g.pcie else None for g in gpus] == [5, 5, 5, 3, 5, 5, 5, 5]


def test_link_rates() -> None:
    assert link_gbps("4xHDR") == 200.0 and link_gbps("1xHDR") == 50.0 and link_gbps("4xNDR") == 400.0
    assert link_gbps(None) is None
    with pytest.raises(ValueError, match="not an InfiniBand link rate"):
        link_gbps("fast")


def test_a_healthy_lab_is_accepted(lab: Checked, tmp_path: Path) -> None:
    plan = accept_plan(lab.index)
    judged = judge(lab.index, _write(tmp_path, outputs(plan, _rates(plan))), plan)
    assert judged.findings == [] and judged.tests_run == judged.tests_planned


def test_one_degraded_cable_is_named_and_only_it(lab: Checked, tmp_path: Path) -> None:
    plan = accept_plan(lab.index)
    victim = plan.ports[2]
    judged = judge(lab.index, _write(tmp_path, outputs(plan, _rates(plan, **{victim.cable: 50.0}))), plan)
    errors = [(f.rule, f.subject) for f in judged.findings if f.severity == "error"]
    assert errors == [("ACC-LINK", victim.label)], judged.findings
    # the unit's and the cluster's all_reduce are slow too: explained by that link, no bisection
    for f in judged.findings:
        if f.rule == "ACC-NCCL-FABRIC":
            assert f.severity == "warning" and victim.label in f.message and "round 1" not in (f.action or "")


def test_a_pcie_fault_is_named(lab: Checked, tmp_path: Path) -> None:
    plan = accept_plan(lab.index)
    node = plan.nodes[1].node
    texts = outputs(plan, _rates(plan), AcceptFaults(pcie={node: {2: 3}}))
    judged = judge(lab.index, _write(tmp_path, texts), plan)
    assert [(f.rule, f.subject) for f in judged.findings] == [("ACC-PCIE", f"{node} GPU 00000000:4C:00.0")]
    assert "Gen3 of Gen5" in judged.findings[0].message
