"""The acceptance tests an inventory implies, in an order that localises faults (docs/accept.md).

1. **nodes**: per GPU node `dcgmi diag -r <level>`, `nvidia-smi -q` (PCIe generation and width under load,
   clocks), `nvidia-smi nvlink --status` and a single-node `all_reduce_perf -g <GPUs>` (NVLink bandwidth);
2. **links**: `ib_write_bw` between HCA ports, in rounds that use no port twice at a time: round 1 pairs
   the ports of each leaf with each other (every node-leaf cable, loaded from both ends of the leaf),
   the next rounds pair every port of a leaf with a port of another leaf (another scalable unit where
   there is one), until each leaf has sent to at least as many distinct ports as it has uplinks: under
   destination-balanced routing (OpenSM's ftree and updn spread destinations over a leaf's up-ports) every
   uplink then carries a flow. Every port is in two tests or more, so a slow cable shows as the one port
   slow in all of its tests;
3. **fabric**: multi-node `all_reduce_perf` per scalable unit, per rail plane where there are planes, and
   over the whole cluster, with the hosts, GPUs and NCCL_IB_HCA of the model.

Commands are argument lists (no shell); values come from the model and are checked names.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass, field

from ..collect.tools import argv
from ..model.index import Index

ALL_REDUCE = ["all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2"]


@dataclass(frozen=True, order=True)
class HostPort:
    node: str
    hca: str
    port: int
    leaf: str
    leaf_port: int
    cable: str

    @property
    def label(self) -> str:
        return f"{self.node}/{self.hca}/{self.port}"


@dataclass(frozen=True)
class NodeTest:
    node: str
    gpus: int
    commands: dict[str, list[str]]
    """output name (the file under DIR/nodes/<node>/) -> argv."""


PERFTEST_PORT = 18515
"""perftest's default TCP port for the out-of-band exchange before the RDMA test."""


@dataclass(frozen=True)
class LinkTest:
    round: int
    server: HostPort
    client: HostPort
    tcp_port: int = PERFTEST_PORT
    """The server's TCP port (`-p`): two servers on one node in one round (two rails) each need their own."""

    @property
    def name(self) -> str:
        """The output's file name under DIR/links/ (what the judge reads)."""
        c, s = self.client, self.server
        return f"{c.node}_{c.hca}_{c.port}--{s.node}_{s.hca}_{s.port}"

    @property
    def cross_leaf(self) -> bool:
        return self.server.leaf != self.client.leaf

    def argv(self, server_address: str) -> tuple[list[str], list[str]]:
        """(server argv, client argv): ib_write_bw over the two HCA ports, large messages, Gb/s."""
        common = ["ib_write_bw", "--report_gbits", "-F", "-s", "1048576", "-D", "5", "-p", str(self.tcp_port)]
        return ([*common, "-d", self.server.hca, "-i", str(self.server.port)],
                [*common, "-d", self.client.hca, "-i", str(self.client.port), server_address])


@dataclass(frozen=True)
class FabricTest:
    name: str
    """``cluster``, ``su<N>`` or ``plane<P>``: the output's file name under DIR/nccl/."""
    nodes: tuple[str, ...]
    gpus_per_node: int
    hcas: tuple[str, ...]

    def argv(self) -> list[str]:
        hosts = ",".join(f"{n}:{self.gpus_per_node}" for n in self.nodes)
        return ["mpirun", "-np", str(len(self.nodes) * self.gpus_per_node), "-H", hosts, "--bind-to", "numa",
                "-x", f"NCCL_IB_HCA={','.join(self.hcas)}", "-x", "NCCL_DEBUG=WARN", *ALL_REDUCE, "-g", "1"]


@dataclass
class AcceptPlan:
    nodes: list[NodeTest] = field(default_factory=list)
    links: list[LinkTest] = field(default_factory=list)
    fabric: list[FabricTest] = field(default_factory=list)
    ports: list[HostPort] = field(default_factory=list)
    uplinks: dict[str, int] = field(default_factory=dict)
    """leaf -> its number of uplink cables (to the tier above)."""

    @property
    def rounds(self) -> int:
        return max((t.round for t in self.links), default=0)


def host_ports(index: Index) -> list[HostPort]:
    """Every cabled HCA port of a node whose cable ends at a leaf switch."""
    out: list[HostPort] = []
    for cable in index.inv.cables:
        for near, far in ((cable.a, cable.b), (cable.b, cable.a)):
            if near.hca is None or near.device not in index.nodes or far.hca is not None:
                continue
            sw = index.switches.get(far.device)
            if sw is not None and sw.role == "leaf":
                out.append(HostPort(near.device, near.hca, near.port, far.device, far.port, cable.id))
    return sorted(out)


def leaf_uplinks(index: Index) -> dict[str, int]:
    """leaf -> how many of its cables go to a switch of another tier."""
    out: dict[str, int] = defaultdict(int)
    for cable in index.inv.cables:
        a, b = index.switches.get(cable.a.device), index.switches.get(cable.b.device)
        if a is None or b is None:
            continue
        for x, y in ((a, b), (b, a)):
            if x.role == "leaf" and y.role != "leaf":
                out[x.name] += 1
    return dict(out)


def link_rounds(ports: list[HostPort], uplinks: dict[str, int]) -> list[LinkTest]:
    by_leaf: dict[str, list[HostPort]] = defaultdict(list)
    for p in ports:
        by_leaf[p.leaf].append(p)
    tests: list[LinkTest] = []
    # round 1: within each leaf (an odd port out waits for the cross-leaf rounds)
    for leaf in sorted(by_leaf):
        mine = by_leaf[leaf]
        tests += [LinkTest(1, mine[i], mine[i + 1]) for i in range(0, len(mine) - 1, 2)]
    leaves = sorted(by_leaf)
    if len(leaves) < 2:
        return tests
    # then leaf pairings of a round-robin tournament, until every leaf has sent to as many distinct ports as
    # it has uplinks (at most as many as it has ports: a leaf of one host loads one at a time) and every
    # port is in two tests (a slow port is told from its partner by the port slow in all of its tests)
    seen: dict[str, set[HostPort]] = defaultdict(set)
    need = {leaf: max(min(uplinks.get(leaf, 0), len(by_leaf[leaf])), 1) for leaf in leaves}
    count: dict[HostPort, int] = defaultdict(int)
    for t in tests:
        count[t.client] += 1
        count[t.server] += 1
    round_no = 1
    for pairing in _round_robin(leaves):
        if round_no > 1 and all(len(seen[leaf]) >= need[leaf] for leaf in leaves) \
                and all(count[p] >= 2 for p in ports):
            break
        round_no += 1
        done = {leaf for leaf in leaves if len(seen[leaf]) >= need[leaf] and all(count[p] >= 2 for p in by_leaf[leaf])}
        for x, y in pairing:
            if round_no > 2 and x in done and y in done:
                continue  # both leaves have all they need: only the others go on
            a, b = (by_leaf[x], by_leaf[y]) if round_no % 2 == 0 else (by_leaf[y], by_leaf[x])
            for client, server in zip(a, b, strict=False):  # one test per port: a port twice would halve both
                tests.append(LinkTest(round_no, server, client))
                count[client] += 1
                count[server] += 1
                # a flow to `server` goes up the client's leaf and down the server's by the spine routing
                # picks for that destination: distinct destinations spread over both leaves' uplinks
                seen[x].add(server)
                seen[y].add(server)
    return tests


def tcp_ports(tests: list[LinkTest]) -> list[LinkTest]:
    """Each test with its server's TCP port: the k-th server on a node in a round listens on PERFTEST_PORT + k."""
    used: dict[tuple[int, str], int] = defaultdict(int)
    out: list[LinkTest] = []
    for t in tests:
        key = (t.round, t.server.node)
        out.append(dataclasses.replace(t, tcp_port=PERFTEST_PORT + used[key]))
        used[key] += 1
    return out


def _round_robin(items: list[str]) -> list[list[tuple[str, str]]]:
    """The circle method: len-1 rounds (len even) in which every item meets every other once."""
    xs = list(items) + ([""] if len(items) % 2 else [])
    n = len(xs)
    rounds: list[list[tuple[str, str]]] = []
    for _ in range(n - 1):
        pairs = [(xs[i], xs[n - 1 - i]) for i in range(n // 2)]
        rounds.append([(a, b) for a, b in pairs if a and b])
        xs = [xs[0], xs[-1], *xs[1:-1]]
    return rounds


def accept_plan(index: Index) -> AcceptPlan:
    inv = index.inv
    level = str(inv.acceptance.dcgm_level)
    plan = AcceptPlan()
    gpu_nodes: dict[str, int] = {}
    for node in inv.nodes:
        hw = index.hardware[node.name]
        if hw.gpus is None or hw.gpus.count == 0:
            continue
        gpu_nodes[node.name] = hw.gpus.count
        plan.nodes.append(NodeTest(node.name, hw.gpus.count, {
            "dcgmi-diag": [*argv("dcgmi-diag", level)],
            "nvidia-smi-q": [*argv("nvidia-smi-q")],
            "nvidia-smi-nvlink": [*argv("nvidia-smi-nvlink")],
            "nccl-single": [*ALL_REDUCE, "-g", str(hw.gpus.count)],
        }))
    plan.ports = host_ports(index)
    plan.uplinks = leaf_uplinks(index)
    plan.links = tcp_ports(link_rounds(plan.ports, plan.uplinks))
    plan.fabric = _fabric_tests(index, gpu_nodes, plan.ports)
    return plan


def _fabric_tests(index: Index, gpu_nodes: dict[str, int], ports: list[HostPort]) -> list[FabricTest]:
    if len(gpu_nodes) < 2:
        return []
    hcas_of: dict[str, list[str]] = defaultdict(list)
    groups: dict[int, set[str]] = defaultdict(set)
    planes: dict[int, set[str]] = defaultdict(set)
    plane_of = index.switch_planes
    for p in ports:
        if p.node in gpu_nodes and p.hca not in hcas_of[p.node]:
            hcas_of[p.node].append(p.hca)
        sw = index.switches[p.leaf]
        if sw.group is not None and p.node in gpu_nodes:
            groups[sw.group].add(p.node)
        if p.leaf in plane_of and p.node in gpu_nodes:
            planes[plane_of[p.leaf]].add(p.node)
    gpus = min(gpu_nodes.values())
    hcas = tuple(sorted({h for hs in hcas_of.values() for h in hs}, key=_hca_key))
    out: list[FabricTest] = []
    if len(groups) > 1:
        out += [FabricTest(f"su{g + 1:02d}", tuple(sorted(ns)), gpus, hcas) for g, ns in sorted(groups.items())
                if len(ns) > 1]
    if len(planes) > 1:
        out += [FabricTest(f"plane{p}", tuple(sorted(ns)), gpus, hcas) for p, ns in sorted(planes.items())
                if len(ns) > 1]
    out.append(FabricTest("cluster", tuple(sorted(gpu_nodes)), gpus, hcas))
    return out


def _hca_key(name: str) -> tuple[str, int]:
    head = name.rstrip("0123456789")
    tail = name[len(head):]
    return head, int(tail) if tail else -1
