"""The acceptance bench (issue #20): planning the tests and judging a run's outputs, on the generated
inventories and on prod, beside the least time the run itself takes (its link rounds at ib_write_bw's -D 5).

The outputs judged are the lab's stand-ins for a healthy fabric (lab/accept_standins.py: real captures, every
link at its declared rate; an H100 node's single-node all_reduce the real 8 x H100 capture), written once per
size: what a whole run saves, at that size.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from clusterforge.accept.judge import judge
from clusterforge.accept.plan import AcceptPlan, accept_plan
from clusterforge.api import load_checked
from clusterforge.lab.accept_standins import outputs
from clusterforge.model.index import Index
from timing import best_of

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
LINK_SECONDS = 5
"""ib_write_bw -D 5: each link round takes at least this long."""


def _write(plan: AcceptPlan, index: Index, run: Path) -> int:
    """A healthy run's outputs: every port at its declared rate."""
    rates: dict[str, float | None] = {}
    for p in plan.ports:
        rate = index.port_rate(p.node, p.hca, p.port)
        rates[p.label] = float(index.cat.rates[rate].gbps) if rate else None
    texts = outputs(plan, rates)
    # the stand-ins' single-node all_reduce is the 8 x A100 capture: an H100 node's is the real 8 x H100 one
    h100 = (FIXTURES / "nccl-tests" / "single-node-8xh100-g8-nvls-448-edited-indent.txt").read_text()
    for t in plan.nodes:
        gpus = index.hardware[t.node].gpus
        if gpus is not None and gpus.model.startswith("H100"):
            texts[f"nodes/{t.node}/nccl-single"] = h100
    for rel, text in texts.items():
        (run / rel).parent.mkdir(parents=True, exist_ok=True)
        (run / rel).write_text(text)
    return len(texts)


def bench_accept(tmp: Path, envs: dict[str, Path]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for name, env in envs.items():
        index = load_checked(env).index
        plan_s = best_of(partial(accept_plan, index))
        plan = accept_plan(index)
        run = tmp / f"accept-{name}"
        files = _write(plan, index, run)
        judged = judge(index, run, plan)
        if judged.findings:
            raise RuntimeError(f"accept bench {name}: a healthy run gave {len(judged.findings)} finding(s), first: "
                               f"{judged.findings[0]}")
        judge_s = best_of(partial(judge, index, run, plan), runs=3)
        rows.append({
            "bench": "accept", "inventory": name, "gpu_nodes": len(plan.nodes), "link_tests": len(plan.links),
            "rounds": plan.rounds, "groups": len(plan.fabric), "outputs": files,
            "plan_s": round(plan_s, 3), "judge_s": round(judge_s, 3),
            "link_rounds_least_s": plan.rounds * LINK_SECONDS,
        })
    return rows
