"""An acceptance run directory built from real captures (A100 dcgmi diag, nvidia-smi nvlink and single-node
all_reduce, an 8 x H100 nvidia-smi -q, the NDR ib_write_bw), for the tests that judge one; where a test needs
another value (a slow link, a slow all_reduce) the number in that capture is replaced: CONSTRUCTED, marked so."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from clusterforge.accept.plan import AcceptPlan

FIX = Path(__file__).resolve().parent / "fixtures"
DCGM_PASS = "aws-samples-p4de-8xa100-80gb-dcgm3.3.3-r2-nvlinks-expected-12-pass-empty-stress.txt"


def perftest(gbps: float) -> str:
    """CONSTRUCTED from the real NDR capture: its BW figures replaced by `gbps`."""
    text = (FIX / "perftest" / "csegpu-ndr-cx7-ib_write_bw-report-gbits-cpufreq-warning-in-table.txt").read_text()
    return text.replace("392.38             392.34", f"{gbps:.2f}             {gbps:.2f}")


def nccl(name: str, busbw: float | None = None) -> str:
    text = (FIX / "nccl-tests" / name).read_text()
    if busbw is not None:  # CONSTRUCTED: the footer's figure replaced
        text = re.sub(r"# Avg bus bandwidth\s*:\s*[\d.]+", f"# Avg bus bandwidth    : {busbw}", text)
    return text


def run_dir(tmp: Path, plan: AcceptPlan, slow_cable: str | None = None, fabric_busbw: float | None = None) -> Path:
    """Every planned output under tmp/run: a clean run, or one slow cable, or a slow fabric all_reduce."""
    d = tmp / "run"
    for t in plan.nodes:
        n = d / "nodes" / t.node
        n.mkdir(parents=True)
        shutil.copy(FIX / "dcgmi-diag" / DCGM_PASS, n / "dcgmi-diag")
        shutil.copy(FIX / "nvidia-smi-q" / "gpud-8xh100-535.161.08.txt", n / "nvidia-smi-q")
        shutil.copy(FIX / "nvidia-smi-nvlink-status" / "gpud-8xa100-sxm4-80gb.txt", n / "nvidia-smi-nvlink")
        (n / "nccl-single").write_text(nccl("gcm-1node-8xa100-80gb-allreduce-hostname-templated.txt"))
    (d / "links").mkdir(parents=True)
    for t in plan.links:
        slow = slow_cable in (t.client.cable, t.server.cable)
        (d / "links" / t.name).write_text(perftest(98.4 if slow else 196.6))
    (d / "nccl").mkdir()
    for f in plan.fabric:
        (d / "nccl" / f.name).write_text(nccl("gcm-2node-16xa100-80gb-allreduce-hostname-templated.txt",
                                              fabric_busbw))
    return d
