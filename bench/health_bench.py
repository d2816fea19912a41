"""The node health check's own cost on a node (issue #24): the rendered cf-nodecheck, run as slurmd runs it,
with every tool it calls answering at once from real captures (tests/fixtures: nvidia-smi of one H100, ibstat of
an 8 x HDR A100 node, `scontrol show node` of an idle node), so what is timed is the check itself: Python's start,
its embedded parsers, the comparison. A real node adds its tools' own time (nvidia-smi is the slow one: about
0.1-0.5 s), bounded by `tool_timeout_s` each. Beside it, Python's bare start on this machine.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from clusterforge.api import load_checked
from clusterforge.render import render_environment

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
RUNS = 20


def _shims(tmp: Path) -> dict[str, str]:
    bin_ = tmp / "bin"
    bin_.mkdir(parents=True, exist_ok=True)
    show = (FIX / "scontrol-show-node" / "jp-blog-slurm22.05-6xh100pcie-idle-drain-kill-task-failed.txt").read_text()
    (tmp / "show.txt").write_text(show.replace("State=IDLE+DRAIN ", "State=IDLE ").replace("Reason=", "Comment="))
    tools = {
        "nvidia-smi": 'if [ "$1" = nvlink ]; then cat {nvl}; else cat {q}; fi\n'.format(
            nvl=FIX / "nvidia-smi-nvlink-status" / "nvutil-1xh100-80gb-590.48.01-18links.txt",
            q=FIX / "nvidia-smi-query-gpu" / "nvutil-1xh100-80gb-590.48.01-allfields-idle.txt"),
        "ibstat": f"cat {FIX / 'ibstat' / 'gpud-a100-hdr-200g.txt'}\n",
        "scontrol": f'if [ "$1" = show ]; then cat {tmp / "show.txt"}; fi\n',
    }
    for name, body in tools.items():
        (bin_ / name).write_text("#!/bin/sh\n" + body)
        (bin_ / name).chmod(0o755)
    return {**os.environ, "PATH": f"{bin_}:/usr/bin:/bin"}


def _time(argv: list[str], env: dict[str, str], expect: int) -> list[float]:
    out = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)
        out.append(time.perf_counter() - t0)
        if p.returncode != expect:
            raise AssertionError(f"{argv[:2]} exited {p.returncode}: {p.stdout[-300:]} {p.stderr[-300:]}")
    return out


def bench_health(tmp: Path) -> list[dict[str, object]]:
    files = render_environment(load_checked(ROOT / "inventories" / "lab").index, "lab")
    script = tmp / "cf-nodecheck"
    script.write_text(files["slurm/nodes/usr/local/lib/clusterforge/cf-nodecheck"])
    cfg = json.loads(files["hosts/gpu01/etc/clusterforge/nodecheck.json"])
    # the captured node: 1 GPU on driver 590.48.01, 9 HDR ports (mlx5_0..8); the lab's own hooks
    cfg.update(gpus=1, nvidia_driver="590.48.01",
               hca_ports=[{"hca": f"mlx5_{i}", "port": 1, "rate": "HDR", "gbps": 200} for i in range(9)])
    (tmp / "nodecheck.json").write_text(json.dumps(cfg))
    env = _shims(tmp)
    check = _time([sys.executable, str(script), "--config", str(tmp / "nodecheck.json"), "--node", "gpu01",
                   "--dry-run"], env, 0)
    bare = _time([sys.executable, "-c", "pass"], env, 0)
    row = {"bench": "health check", "checks": ",".join(cfg["checks"]), "runs": RUNS}
    return [{**row, "what": "cf-nodecheck, a healthy node (tools answer at once)",
             "median_s": round(statistics.median(check), 3), "min_s": round(min(check), 3)},
            {**row, "what": "python3 -c pass (its start alone)", "median_s": round(statistics.median(bare), 3),
             "min_s": round(min(bare), 3)}]
