"""Generate explicit rail-optimized inventories of N nodes (8 GPUs, 8 HCAs each) for the benchmark.

The benchmark measures load + check on inventories that list every switch and cable, as a
frozen plan does: this generator writes them directly (2 tiers, or 3 when a 2-tier fabric
cannot hold the leaves). It was also how the first example inventories were made, before the
planner existed; those now come from their `fabric` spec (prod, staging) or are kept by hand (lab).

    python bench/gen_inventory.py bench out/bench-2048 --nodes 2048
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from clusterforge.catalog import catalog
from clusterforge.model.site import Rack, Row, Site
from clusterforge.plan.geometry import Geometry

HEADER = "# yaml-language-server: $schema=../../schemas/inventory.schema.json\n"


@dataclass
class Spec:
    name: str
    nodes: int
    hcas: int  # single-port HCAs per node = rails
    rate: str
    gpu: str
    gpus: int
    hca_model: str
    node_kw: float
    node_u: int
    nodes_per_rack: int
    cooling: str
    leaf_model: str
    spine_model: str
    su_size: int
    storage: int = 0
    sm: int = 1
    mgmt: str = "10.10.0.0/20"
    bmc: str = "10.11.0.0/20"
    ipoib: str = "10.100.0.0/16"
    node_fmt: str = "gpu{n:04d}"
    extra: dict[str, str] = field(default_factory=dict)


def bench_spec(nodes: int) -> Spec:
    return Spec(
        f"bench-{nodes}",
        nodes=nodes,
        hcas=8,
        rate="NDR",
        gpu="H100-SXM",
        gpus=8,
        hca_model="ConnectX-7",
        node_kw=10.2,
        node_u=8,
        nodes_per_rack=4,
        cooling="cold-plate",
        leaf_model="QM9700",
        spine_model="QM9700",
        su_size=32,
        storage=0,
        sm=2,
        mgmt="10.0.0.0/16",
        bmc="10.1.0.0/16",
        ipoib="10.64.0.0/11",
        node_fmt="gpu{n:05d}",
    )


def generate(spec: Spec) -> dict[str, str]:
    """Return {file name: YAML text} for the environment."""
    cat = catalog()
    leaf_radix = cat.switches[spec.leaf_model].ports
    spine_radix = cat.switches[spec.spine_model].ports
    down = leaf_radix // 2
    if spec.su_size > down:
        raise SystemExit(f"su_size {spec.su_size} exceeds {down} down ports per leaf")
    n_su = math.ceil(spec.nodes / spec.su_size)
    infra = spec.storage + spec.sm
    # HA groups (the subnet managers, Lustre failover pairs) must not share a single leaf (check INV-HA):
    # at least two infra leaves once there are two infra nodes, the nodes dealt round-robin over them
    infra_leaves = max(math.ceil(infra / down), 2 if infra >= 2 else 1) if infra else 0
    n_leaves = n_su * spec.hcas + infra_leaves
    uplinks = spec.su_size  # 1:1 against the down ports a scalable unit uses
    # the fewest spines (at least 2) that split the uplinks evenly and hold every leaf
    choices = [
        s for s in range(2, uplinks + 1) if uplinks % s == 0 and n_leaves * (uplinks // s) <= spine_radix
    ]
    three_tier = not choices
    if three_tier:
        # pods of `uplinks` leaves, each with `uplinks` spines (one link leaf->spine);
        # spine j of every pod goes to core group j, `cores` switches per group
        pod = uplinks
        n_pods = math.ceil(n_leaves / pod)
        cores_choices = [c for c in range(1, pod + 1) if pod % c == 0 and n_pods * (pod // c) <= spine_radix]
        if not cores_choices:
            raise SystemExit(f"{n_leaves} leaves do not fit 3 tiers of {spec.spine_model}")
        cores = cores_choices[0]
        spines, per = n_pods * pod, 1
    else:
        spines = choices[0]
        per = uplinks // spines
        n_pods, pod, cores = 1, n_leaves, 0

    # one row per scalable unit; the spine/core row sits in the middle of the hall
    mid = n_su // 2
    rows = [Row(name=f"row-{s + 1:02d}", index=s if s < mid else s + 1) for s in range(n_su)]
    rows.append(Row(name="row-core", index=mid))
    rowidx = {r.name: r.index for r in rows}
    site = Site(name=spec.name, rows=sorted(rows, key=lambda r: r.index))
    racks: list[Rack] = []
    node_rack: list[tuple[str, int]] = []
    rack_of_su: list[Rack] = []
    per_rack = spec.nodes_per_rack
    racks_per_su = math.ceil(spec.su_size / per_rack)
    sensors = 2 if spec.cooling != "air" else 0
    for su in range(n_su):
        row = f"row-{su + 1:02d}"
        half = racks_per_su // 2
        net = Rack(
            name=f"{_p(spec)}-su{su + 1:02d}-net",
            row=row,
            position=half,
            cooling=spec.cooling,
            leak_sensors=sensors,
        )
        racks.append(net)
        rack_of_su.append(net)
        for k in range(racks_per_su):
            racks.append(
                Rack(
                    name=f"{_p(spec)}-su{su + 1:02d}-r{k + 1:02d}",
                    row=row,
                    position=k if k < half else k + 1,
                    cooling=spec.cooling,
                    leak_sensors=sensors,
                )
            )
    for n in range(spec.nodes):
        su, k = divmod(n, spec.su_size)
        rack = racks[su * (racks_per_su + 1) + 1 + k // per_rack]
        node_rack.append((rack.name, 2 + (k % per_rack) * spec.node_u))
    n_core = cores * pod if three_tier else 0
    core_racks = math.ceil((spines + n_core + infra_leaves + infra * 2) / 16) or 1
    for c in range(core_racks):
        racks.append(Rack(name=f"{_p(spec)}-core{c + 1:02d}", row="row-core", position=c, cooling="air"))
    by_name = {r.name: r for r in racks}

    names = [spec.node_fmt.format(n=n + 1) for n in range(spec.nodes)]
    lines_nodes = []
    for n, name in enumerate(names):
        rack, u = node_rack[n]
        lines_nodes.append(f"  - {{name: {name}, rack: {rack}, u: {u}, profile: gpu-node}}")
    # infra nodes: SM and storage servers in the core racks, 2U each
    infra_nodes: list[tuple[str, str, int, str]] = []
    for i in range(spec.sm):
        infra_nodes.append((f"sm{i + 1:02d}", "subnet-manager", 0, "sm-node"))
    for i in range(spec.storage):
        infra_nodes.append((f"lus{i + 1:02d}", "storage", 0, "lustre-server"))
    placed = []
    for slot, (name, role, _, prof) in enumerate(infra_nodes):
        rack = racks[-core_racks + (slot // 8)]
        u = 20 + (slot % 8) * 2
        placed.append((name, role, rack.name, u, prof))
        own = ""
        if role == "storage" and name in ("lus01", "lus02"):  # the MDT pair: 2 of the 12 SSDs hold metadata
            own = (", storage: [{kind: ssd, count: 10, size_tb: 7.68, role: lustre-ost}, "
                   "{kind: ssd, count: 2, size_tb: 7.68, role: lustre-mdt}]")
        lines_nodes.append(f"  - {{name: {name}, rack: {rack.name}, u: {u}, role: {role}, profile: {prof}{own}}}")

    switches = []
    leaves: list[tuple[str, Rack, int]] = []
    for su in range(n_su):
        for r in range(spec.hcas):
            name = f"leaf-su{su + 1:02d}-r{r}"
            rack = rack_of_su[su]
            u = 2 + r
            leaves.append((name, rack, u))
            switches.append(
                f"  - {{name: {name}, model: {spec.leaf_model}, role: leaf, rack: {rack.name}, "
                f"u: {u}, group: {su}, rail: {r}}}"
            )
    for i in range(infra_leaves):
        rack = racks[-core_racks]
        name = f"leaf-infra{i + 1:02d}"
        leaves.append((name, rack, 2 + i))
        switches.append(
            f"  - {{name: {name}, model: {spec.leaf_model}, role: leaf, rack: {rack.name}, u: {2 + i}}}"
        )
    slot_sw = infra_leaves

    def upper(name: str, role: str, extra: str = "") -> tuple[str, Rack, int]:
        """Place a spine or core switch in the next free unit of the core racks (16 per rack)."""
        nonlocal slot_sw
        rack, u = racks[-core_racks + (slot_sw // 16)], 2 + (slot_sw % 16)
        slot_sw += 1
        switches.append(f"  - {{name: {name}, model: {spec.spine_model}, role: {role}, rack: {rack.name}, "
                        f"u: {u}{extra}}}")
        return name, rack, u

    spine_list = [upper(f"spine{s + 1:02d}", "spine", f", group: {s // pod}") for s in range(spines)]
    core_list = [upper(f"core{c + 1:03d}", "core") for c in range(n_core)]

    cables = []
    cid = 0
    geo = Geometry(site, rowidx)  # one: its per-rack-pair cache serves every cable

    def cable(a: str, ra: Rack, ua: int, b: str, rb: Rack, ub: int) -> None:
        nonlocal cid
        cid += 1
        length = geo.length(ra, ua, rb, ub)
        media = "DAC"
        if length > (cat.reach("DAC", spec.rate) or 0):
            media = "AOC"
        size = cat.orderable_length(media, length)
        extra = ""
        if size is None or size > (cat.reach(media, spec.rate) or 0):
            media, extra = "fiber", ", fiber_type: OS2"  # transceivers + single-mode fiber
            size = cat.orderable_length(media, length)
        cables.append(f"  - {{id: C-{cid:05d}, a: {a}, b: {b}, media: {media}, length_m: {size:g}{extra}}}")

    for n, name in enumerate(names):
        su, k = divmod(n, spec.su_size)
        rack = by_name[node_rack[n][0]]
        for r in range(spec.hcas):
            leaf, lrack, lu = leaves[su * spec.hcas + r]
            cable(f"{name}/mlx5_{r}/1", rack, node_rack[n][1], f"{leaf}/{k + 1}", lrack, lu)
    for i, (name, _role, rack_name, u, _p2) in enumerate(placed):
        leaf, lrack, lu = leaves[n_su * spec.hcas + i % infra_leaves]  # partners on different leaves
        cable(f"{name}/mlx5_0/1", by_name[rack_name], u, f"{leaf}/{i // infra_leaves + 1}", lrack, lu)
    for li, (leaf, lrack, lu) in enumerate(leaves):
        p0 = (li // pod) * (pod if three_tier else 0)
        group = spine_list[p0 : p0 + pod] if three_tier else spine_list
        for s, (spine, srack, su_) in enumerate(group):
            for j in range(per):
                cable(
                    f"{leaf}/{down + s * per + j + 1}",
                    lrack,
                    lu,
                    f"{spine}/{(li % pod) * per + j + 1}",
                    srack,
                    su_,
                )
    if three_tier:
        links = pod // cores  # spine -> each core of its group
        for si, (spine, srack, su_) in enumerate(spine_list):
            p, j = divmod(si, pod)
            for c in range(cores):
                core, crack, cu = core_list[j * cores + c]
                for k in range(links):
                    cable(
                        f"{spine}/{pod + c * links + k + 1}",
                        srack,
                        su_,
                        f"{core}/{p * links + k + 1}",
                        crack,
                        cu,
                    )

    files = {
        "site.yaml": _site_yaml(spec, site, racks),
        "hardware.yaml": _hardware_yaml(spec),
        "nodes.yaml": HEADER + "nodes:\n" + "\n".join(lines_nodes) + "\n",
        "fabric.yaml": HEADER
        + "switches:\n"
        + "\n".join(switches)
        + "\ncables:\n"
        + "\n".join(cables)
        + "\n",
        "services.yaml": _services_yaml(spec, placed),
    }
    return files


def _p(spec: Spec) -> str:
    return spec.name.split("-")[0][:4]


def _site_yaml(spec: Spec, site: Site, racks: list[Rack]) -> str:
    out = [
        HEADER,
        f"site:\n  name: {site.name}\n  routing_allowance_m: {site.routing_allowance_m:g}\n  rows:\n",
    ]
    for r in site.rows:
        out.append(f"    - {{name: {r.name}, index: {r.index}}}\n")
    out.append("racks:\n")
    for r in racks:
        extra = f", leak_sensors: {r.leak_sensors}" if r.leak_sensors else ""
        out.append(
            f"  - {{name: {r.name}, row: {r.row}, position: {r.position}, cooling: {r.cooling}{extra}}}\n"
        )
    return "".join(out)


def _hardware_yaml(spec: Spec) -> str:
    numa = [0] * (spec.gpus // 2) + [1] * (spec.gpus - spec.gpus // 2)
    hcas = []
    for r in range(spec.hcas):
        gpu = r * spec.gpus // spec.hcas
        hcas.append(
            f"      - {{name: mlx5_{r}, model: {spec.hca_model}, rail: {r}, gpu: {gpu}, "
            f"numa: {numa[gpu]}, netdev: ib{r}, ports: [{{port: 1, rate: {spec.rate}}}]}}"
        )
    return (
        HEADER + "profiles:\n"
        f"  - name: gpu-node\n    u_height: {spec.node_u}\n    power_kw: {spec.node_kw}\n"
        f"    gpus: {{model: {spec.gpu}, count: {spec.gpus}, nvlink_topology: nvswitch, numa: {numa}}}\n"
        "    hcas:\n" + "\n".join(hcas) + "\n"
        "    storage:\n      - {kind: nvme, count: 4, size_tb: 3.84, role: cache}\n"
        "  - name: sm-node\n    u_height: 1\n    power_kw: 0.4\n    hcas:\n"
        f"      - {{name: mlx5_0, model: {spec.hca_model}, netdev: ib0, rail: 0, "
        f"ports: [{{port: 1, rate: {spec.rate}}}]}}\n"
        "  - name: lustre-server\n    u_height: 2\n    power_kw: 0.9\n    hcas:\n"
        f"      - {{name: mlx5_0, model: {spec.hca_model}, netdev: ib0, rail: 0, "
        f"ports: [{{port: 1, rate: {spec.rate}}}]}}\n"
        "    storage:\n      - {kind: ssd, count: 12, size_tb: 7.68, role: lustre-ost}\n"
    )


def _services_yaml(spec: Spec, placed: list[tuple[str, str, str, int, str]]) -> str:
    sms = [p[0] for p in placed if p[1] == "subnet-manager"]
    lus = [p[0] for p in placed if p[1] == "storage"]
    import ipaddress

    ib = ipaddress.ip_network(spec.ipoib)
    halves = list(ib.subnets(prefixlen_diff=max(1, math.ceil(math.log2(max(spec.hcas, 2))))))
    out = [HEADER, "addressing:\n"]
    out.append(
        f"  management: {{cidr: {spec.mgmt}, gateway: {ipaddress.ip_network(spec.mgmt)[1]}, first: 10}}\n"
    )
    out.append(f"  bmc: {{cidr: {spec.bmc}, first: 10}}\n  ipoib:\n")
    for r in range(spec.hcas):
        out.append(f"    - {{name: ib{r}, rail: {r}, cidr: {halves[r]}, first: 10, mtu: 2044}}\n")
    out.append(
        "software:\n  nvidia_driver: 550.90.07\n  cuda: 12.4.1\n  doca_ofed: 24.04-0.7.0.0\n"
        "  nccl: 2.21.5-1\n  nccl_tests: 2.13.9\n  lustre_client: 2.15.5\n" + ("  lemur: 0.6.0\n" if lus else "")
    )
    if lus:
        mgs_ip = halves[0][10 + spec.nodes + spec.sm]
        out.append(
            f"lustre:\n  - name: lfs01\n    mgs_nids: ['{mgs_ip}@o2ib0']\n    mount: /lustre/lfs01\n"
            f"    lnet: o2ib0\n    interfaces: [ib0]\n    servers: [{', '.join(lus)}]\n"
        )
        out.append(_storage_tiers(lus))
    out.append("opensm:\n  routing_engine: ftree\n  sm_nodes:\n")
    for i, sm in enumerate(sms):
        out.append(f"    - {{node: {sm}, priority: {15 - i}}}\n")
    out.append(
        "  partitions:\n    - name: default\n      pkey: 0x7fff\n      ipoib: true\n"
        "      members: [{device: ALL, membership: full}]\n"
    )
    # Slurm, the one path to the scheduler (deploy reboots, day-2 waves, the drain hook, the health check)
    out.append('deploy:\n  reboot:\n    drain: [scontrol, update, "nodename={hosts}", state=drain, "reason={reason}"]\n'
               '    resume: [scontrol, update, "nodename={hosts}", state=resume]\n'
               'health_check:\n  enabled: true\n')
    return "".join(out)


def _storage_tiers(lus: list[str]) -> str:
    """The design brief's three tiers (docs/storage.md) on the storage servers: failover pairs in server order,
    MGS/MDT0 and MDT1 on the first pair's 2 metadata SSDs (raid1), OSTs of 6 SSDs (raid6) on the rest of the
    drives, PCC of 2 TB on the GPU nodes' NVMe, an HSM archive to an S3 endpoint in TEST-NET-1."""
    pairs = [(lus[i], lus[i + 1]) for i in range(0, len(lus) - 1, 2)]
    out = ["    failover_pairs:\n"] + [f"      - [{a}, {b}]\n" for a, b in pairs]
    out.append("    targets:\n")
    if len(lus) >= 2:
        out.append(f"      - {{kind: mdt, index: 0, server: {lus[0]}, devices: 2, layout: raid1, mgs: true}}\n")
        out.append(f"      - {{kind: mdt, index: 1, server: {lus[1]}, devices: 2, layout: raid1}}\n")
    ost = 0
    for k, server in enumerate(lus):
        for _ in range(1 if k < 2 else 2):  # the MDT pair has 10 drives left for OSTs: one OST of 6
            out.append(f"      - {{kind: ost, index: {ost}, server: {server}, devices: 6}}\n")
            ost += 1
    out.append("    pcc: {size_tb: 2, rule: 'projid={1000}'}\n")
    out.append(f"    hsm: {{agents: [{lus[-1]}], endpoint: 'https://192.0.2.10:7480', bucket: lfs01-archive, "
               "archive_id: 2, credentials: {file: /etc/lustre/hsm-s3.cred}, raw_tb: 2000}\n")
    return "".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("env", choices=["bench"], help="bench (the only kind left)")
    ap.add_argument("out", type=Path)
    ap.add_argument("--nodes", type=int, default=256)
    ap.add_argument("--storage", type=int, default=0, help="Lustre servers, with the storage tiers (docs/storage.md)")
    args = ap.parse_args()
    spec = bench_spec(args.nodes)
    if args.storage:
        from dataclasses import replace

        spec = replace(spec, storage=args.storage)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in generate(spec).items():
        (args.out / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
