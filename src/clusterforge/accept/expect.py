"""What each acceptance test must reach, from the model (docs/accept.md has the formulas and sources).

- a link: `ib_write_bw` Gb/s >= link_efficiency x the data rate of the slower end (catalog rates, e.g.
  NDR 400 Gb/s);
- a node's NVLink: single-node `all_reduce_perf` bus bandwidth >= nvlink_efficiency x one GPU's NVLink
  bandwidth per direction (catalog: links x GB/s per link);
- the fabric: multi-node `all_reduce_perf` bus bandwidth >= nccl_efficiency x a node's network bandwidth
  (its GPU-node HCA ports x their rate / 8, in GB/s): nccl-tests defines busbw so that it approaches the
  slowest link of the collective, and a node's rails are that link in a rail-optimized fat tree;
- a GPU's PCIe link: the generation of the GPU catalog at x16.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.index import Index


@dataclass(frozen=True)
class Expect:
    link_gbps: dict[str, float]
    """`node/hca/port` -> the least ib_write_bw Gb/s a healthy link reaches."""
    link_rate: dict[str, str]
    nvlink_busbw_gbs: dict[str, float]
    """node -> the least single-node all_reduce bus bandwidth (GB/s); absent without NVLink."""
    node_net_gbs: dict[str, float]
    """node -> its network bandwidth (GB/s): the sum of its cabled HCA ports' rates / 8."""
    pcie_gen: dict[str, int]
    """node -> the PCIe generation its GPUs' host links run at (from the GPU catalog)."""

    def fabric_busbw_gbs(self, nodes: tuple[str, ...], efficiency: float) -> float:
        """The least bus bandwidth of an all_reduce over `nodes`: its slowest node's network bandwidth."""
        return round(efficiency * min(self.node_net_gbs[n] for n in nodes), 2)


def expect(index: Index) -> Expect:
    acc = index.inv.acceptance
    cat = index.cat
    link_gbps: dict[str, float] = {}
    link_rate: dict[str, str] = {}
    net: dict[str, float] = {}
    for (node, hca, port), info in index.host_ports.items():
        cable = index.cable_at.get((node, hca, port))
        if cable is None or hca is None or info.rate is None:
            continue
        far = cable.b if (cable.a.device, cable.a.hca, cable.a.port) == (node, hca, port) else cable.a
        rate = cat.slower(info.rate, index.port_rate(far.device, far.hca, far.port)) or info.rate
        gbps = cat.rates[rate].gbps
        label = f"{node}/{hca}/{port}"
        link_gbps[label] = round(acc.link_efficiency * gbps, 2)
        link_rate[label] = rate
        net[node] = net.get(node, 0.0) + gbps / 8
    nvlink: dict[str, float] = {}
    pcie: dict[str, int] = {}
    for name in index.nodes:
        gpus = index.hardware[name].gpus
        if gpus is None or gpus.count == 0:
            continue
        model = cat.gpus.get(gpus.model)
        if model is None:
            continue
        if model.nvlink_links and gpus.count > 1:
            nvlink[name] = round(acc.nvlink_efficiency * model.nvlink_links * model.link_gbs, 2)
        if model.pcie_gen is not None:
            pcie[name] = model.pcie_gen
    return Expect(link_gbps, link_rate, nvlink, {k: round(v, 3) for k, v in net.items()}, pcie)
