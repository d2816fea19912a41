"""The acceptance bench (issue #20): planning the tests and judging a run's outputs, on the generated
inventories and on prod, beside the least time the run itself takes (its link rounds at ib_write_bw's -D 5).

The outputs judged are the lab's stand-ins for a healthy fabric (lab/accept_standins.py: real captures, every
link at its declared rate; an H100 node's single-node all_reduce the real 8 x H100 capture), written once per
size: what a whole run saves, at that size.
"""

from __future__ import annotations

import time
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


class BenchFailed(RuntimeError):
    """A routed bench that could not run what it times: no figure."""


MEM_SPARE_MB = 6 * 1024
"""What the routed bench leaves free: it refuses a size whose simulator would not fit beside it."""
SM_MB_PER_SWITCH_LID = 40e-6
"""OpenSM's and ibsim's memory per switch and LID routed, measured: OpenSM held 1.1 GB routing the generated
2,048-node fabric (1,570 switches, 18,000 LIDs), ibsim about as much again."""


def _mem_available_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def bench_routed(tmp: Path, envs: dict[str, Path], engine: str = "minhop") -> list[dict[str, object]]:
    """The plan from the SM's routes (issue #36): each fabric rendered, run by ibsim, routed by the real OpenSM
    (`engine`, lmc 0) and its own LFT dump read (lab/routes_capture.py, no diags: their SMP walk takes minutes at
    2,048 nodes); the routed plan beside the plan without routes, and a healthy run judged along the routes
    beside the judgement without them."""
    from clusterforge.accept.route_plan import routed_plan
    from clusterforge.collect.store import read_lines
    from clusterforge.lab.routes_capture import route_fabric
    from clusterforge.parse import ibroute
    from clusterforge.render import render_environment
    from clusterforge.validate.routes import uplinks

    rows: list[dict[str, object]] = []
    for name, env in envs.items():
        index = load_checked(env).index
        net = render_environment(index, name)["fabric/ibsim.net"]
        # the tables are a line per switch and LID (2.1 GB of text for 2,048 nodes), read as a stream into a byte
        # a LID; the simulator and OpenSM are what needs the memory: refuse what would not fit with 6 GB spare
        lids = len(index.host_ports) + len(index.inv.switches)
        need = int(len(index.inv.switches) * lids * SM_MB_PER_SWITCH_LID) + 1200
        if _mem_available_mb() < MEM_SPARE_MB + need:
            raise BenchFailed(f"accept-routes bench {name}: routing it needs about {need} MB; "
                              f"{_mem_available_mb()} MB available (6 GB kept spare)")
        sm = index.inv.opensm
        assert sm is not None and sm.sm_nodes
        sm_node = sm.sm_nodes[0].node
        routed = route_fabric(net, f"{sm_node} {index.hardware[sm_node].hcas[0].name}", engine,
                              tmp / f"routes-{name}", diags=False)
        path = routed.lfts_path
        start = time.monotonic()  # once: 2.1 GB at 2,048 nodes
        tables = ibroute.read(read_lines(path))
        parse_s = time.monotonic() - start
        base = accept_plan(index)
        plan_s = best_of(partial(routed_plan, index, base, tables), runs=1)
        plan, routes, cov = routed_plan(index, base, tables)
        run = tmp / f"accept-routed-{name}"
        _write(plan, index, run)
        if (found := judge(index, run, plan, routes).findings):
            raise BenchFailed(f"accept-routes bench {name}: a healthy run gave {len(found)} finding(s): {found[0]}")
        ups = uplinks(index)
        rows.append({
            "bench": "accept-routes", "inventory": name, "engine": engine, "switches": len(index.inv.switches),
            "uplinks": len(ups), "crossed": sum(1 for c in ups if cov.crossing.get(c)),
            "twice": sum(1 for c in ups if len(cov.crossing.get(c, [])) >= 2), "unreachable": len(cov.unreachable),
            "link_tests": len(plan.links), "link_tests_no_routes": len(base.links), "rounds": plan.rounds,
            "rounds_no_routes": base.rounds, "dump_mb": round(path.stat().st_size / 1e6, 1),
            "sm_route_s": round(routed.route_s, 1), "parse_s": round(parse_s, 3), "plan_s": round(plan_s, 3),
            "judge_routes_s": round(best_of(partial(judge, index, run, plan, routes), runs=1), 3),
            "judge_s": round(best_of(partial(judge, index, run, plan), runs=1), 3),
        })
    return rows
