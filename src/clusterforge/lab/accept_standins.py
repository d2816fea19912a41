"""LAB-ONLY stand-ins for the acceptance tools: what `clusterforge accept ENV --plan` would save on the lab,
in the real tools' formats, with values from the lab's fabric as it is now. Pure (texts from data).

The lab has no GPUs and no RDMA data path, so nothing here is measured. Each output is a real capture
(`lab/captures/<name>.txt`, each with its `.source`; the same files as tests/fixtures) with its figures
replaced:

============================ ======================================================================
output                       stand-in value
============================ ======================================================================
links/<client>--<server>     `ib_write_bw` of the NDR capture, BW peak and average = HEALTHY (its
                             392.34 of 400 Gb/s) x the data rate of the slower of the two ports'
                             links as ibnetdiscover shows them now (a `lab fault degrade` to 1X is
                             a quarter); a port whose link is down: perftest's real failure output
nodes/<n>/nvidia-smi-q       the 8 x H100 capture; a `lab fault pcie` GPU at the generation given
nodes/<n>/dcgmi-diag,        the A100 captures (all pass, NVLink up, 211 GB/s single-node all_reduce)
nvidia-smi-nvlink, nccl-single
nccl/<group>                 the 2-node A100 all_reduce, every algbw/busbw (and time) scaled so its
                             average bus bandwidth is NCCL_SHARE x the slowest node's ports x the
                             rate of its slowest port / 8: NCCL spreads a collective evenly over a
                             node's rails, so its slowest rail bounds every one
============================ ======================================================================

Given the SM's routes (`lab accept --routes FILE`: validate/routes.py), a link test's rate is that of the slowest
link on its routed path instead (accept/locate.py `rates_along`): a degraded uplink slows exactly the tests
whose flow the SM sends over it. Without routes the stand-in knows the two ports' links only, not the path between them.
`accept` judges these files exactly as it judges a real run's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

from clusterforge.accept.plan import AcceptPlan, HostPort
from clusterforge.lab.netfile import LANE_GBPS, LANES

LABEL = "LAB-ONLY stand-in outputs (clusterforge lab accept): real captures with figures from the lab's fabric"
HEALTHY = 392.34 / 400.0
"""ib_write_bw's share of the link's data rate in the real NDR capture (98.1 %)."""
NCCL_SHARE = 0.92
"""all_reduce bus bandwidth as a share of the slowest node's network (the model's bound is 0.80)."""
_BW_ROW = re.compile(r"^( 65536      5000 +)392\.38( +)392\.34( \t\t +)0\.748336$", re.M)
_NCCL_ROW = re.compile(r"^(\s+\d+\s+\d+\s+\w+\s+\w+\s+-?\d+)((?:\s+\S+){8})$")
_AVG = re.compile(r"(# Avg bus bandwidth\s*: )([\d.]+)")
_PCIE_CURRENT = re.compile(r"(PCIe Generation\n(?:.*\n)*?\s+Current\s+: )(\d+)")


@dataclass(frozen=True)
class AcceptFaults:
    """The lab's acceptance faults (`lab fault pcie NODE GPU --gen N`): node -> GPU index -> PCIe generation."""

    pcie: Mapping[str, Mapping[int, int]] = field(default_factory=dict)


@cache
def capture(name: str) -> str:
    return resources.files("clusterforge.lab").joinpath("captures", f"{name}.txt").read_text(encoding="utf-8")


def ib_write_bw(device: str, link_gbps: float | None) -> str:
    """The client's output for a link whose slower port runs at `link_gbps` (None: a port is down)."""
    if link_gbps is None:
        return capture("ib_write_bw-failed")
    gbps = HEALTHY * link_gbps
    text = capture("ib_write_bw").replace("Device         : mlx5_0", f"Device         : {device}")
    mpps = gbps * 1e9 / (65536 * 8) / 1e6
    out, n = _BW_ROW.subn(lambda m: f"{m.group(1)}{gbps:.2f}{m.group(2)}{gbps:.2f}{m.group(3)}{mpps:.6f}", text)
    if n != 1:
        raise RuntimeError("lab/captures/ib_write_bw.txt is not the capture this stand-in was written for")
    return out


def nvidia_smi_q(gens: Mapping[int, int]) -> str:
    """The 8-GPU capture, GPU i's current PCIe generation set to gens[i] (under load: `Current`)."""
    parts = re.split(r"(?m)^(?=GPU [0-9A-F]{8}:)", capture("nvidia-smi-q"))
    head, gpus = parts[0], parts[1:]
    for i, gen in gens.items():
        if 0 <= i < len(gpus):
            gpus[i] = _PCIE_CURRENT.sub(lambda m, g=gen: f"{m.group(1)}{g}", gpus[i], count=1)
    return head + "".join(gpus)


def all_reduce(busbw_gbs: float) -> str:
    """The 2-node all_reduce capture scaled so that its average bus bandwidth is `busbw_gbs`."""
    text = capture("nccl-fabric")
    m = _AVG.search(text)
    if m is None:
        raise RuntimeError("lab/captures/nccl-fabric.txt has no average bus bandwidth")
    k = busbw_gbs / float(m.group(2))

    def row(line: str) -> str:
        r = _NCCL_ROW.match(line)
        if r is None:
            return line
        t1, a1, b1, w1, t2, a2, b2, w2 = r.group(2).split()
        cols = [_time(float(t1) / k), f"{float(a1) * k:.2f}", f"{float(b1) * k:.2f}", w1,
                _time(float(t2) / k), f"{float(a2) * k:.2f}", f"{float(b2) * k:.2f}", w2]
        return r.group(1) + "".join(f" {c:>7}" if i % 4 != 3 else f" {c:>6}" for i, c in enumerate(cols))

    body = "\n".join(row(line) for line in text.split("\n"))
    return _AVG.sub(lambda mm: f"{mm.group(1)}{busbw_gbs:.3f}", body)


def link_gbps(rate: str | None) -> float | None:
    """ibnetdiscover's rate of a link (`4xHDR`) as its data rate in Gb/s; None (no link) stays None."""
    if rate is None:
        return None
    m = re.fullmatch(r"(\d+)x([A-Z]+)", rate)
    if m is None or f"{m.group(1)}X" not in LANES or m.group(2) not in LANE_GBPS:
        raise ValueError(f"not an InfiniBand link rate: {rate!r}")
    return LANES[f"{m.group(1)}X"] * LANE_GBPS[m.group(2)]


def _time(us: float) -> str:
    """nccl-tests' time column: one decimal below 10,000 us, whole microseconds from there."""
    return f"{us:.1f}" if us < 10000 else f"{us:.0f}"


def node_gbs(ports: list[HostPort], rates: Mapping[str, float | None]) -> float:
    """What NCCL gets out of a node's network: its ports x its slowest port's rate, in GB/s (0: one is down)."""
    live = [rates.get(p.label) for p in ports]
    if not live or any(r is None for r in live):
        return 0.0
    return len(live) * min(r for r in live if r is not None) / 8


def cable_end(key: tuple[str, str | None, int]) -> tuple[str, int]:
    """A declared cable end as ibnetdiscover names it in the lab: (node description, port)."""
    device, hca, port = key
    return (f"{device} {hca}" if hca else device, port)


def outputs(plan: AcceptPlan, rates: Mapping[str, float | None],
            faults: AcceptFaults | None = None, along: Mapping[str, float | None] | None = None) -> dict[str, str]:
    """Every output the plan names (its path under the run directory -> text): `rates` is each GPU-node
    port's link data rate now (`HostPort.label` -> Gb/s; None: down); `along`, a test's rate along its routed
    path (locate.rates_along), where known."""
    faults = faults or AcceptFaults()
    along = along or {}
    out: dict[str, str] = {}
    for t in plan.nodes:
        base = f"nodes/{t.node}"
        out[f"{base}/dcgmi-diag"] = capture("dcgmi-diag")
        out[f"{base}/nvidia-smi-q"] = nvidia_smi_q(faults.pcie.get(t.node, {}))
        out[f"{base}/nvidia-smi-nvlink"] = capture("nvidia-smi-nvlink")
        out[f"{base}/nccl-single"] = capture("nccl-single")
    for lt in plan.links:
        a, b = rates.get(lt.client.label), rates.get(lt.server.label)
        gbps = along[lt.name] if lt.name in along else None if a is None or b is None else min(a, b)
        out[f"links/{lt.name}"] = ib_write_bw(lt.client.hca, gbps)
    ports: dict[str, list[HostPort]] = {}
    for p in plan.ports:
        ports.setdefault(p.node, []).append(p)
    for ft in plan.fabric:
        slowest = min(node_gbs(ports.get(n, []), rates) for n in ft.nodes)
        out[f"nccl/{ft.name}"] = all_reduce(max(NCCL_SHARE * slowest, 0.001))
    return out
