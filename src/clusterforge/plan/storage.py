"""The storage sizing report (`clusterforge plan storage ENV`, docs/storage.md): for each Lustre file system
that declares its targets, capacity raw and usable, the read bandwidth its OST devices deliver, the fabric
links that reach its object storage servers, what the GPUs that mount it ask, and which of the three is the
bottleneck; then the three storage tiers (local cache, Lustre, object archive) side by side.

Formulas (all GB/s are bytes; a link's Gb/s is divided by 8):
  usable(target)   = data_devices(layout, devices) x device size  (or its declared size_tb, when smaller)
  devices_gbps     = sum over OSTs of data_devices x storage_sizing.device_read_gbps[kind]
  links_gbps       = sum over the OSTs' servers of their InfiniBand HCA ports x the port's rate / 8
  degraded_gbps    = links_gbps less the largest one server's links (a server down, its partner serves both)
  demand_gbps      = sum over the file system's GPU clients of GPUs x read_gbps_per_gpu (by profile)
  supply           = min(devices_gbps, links_gbps); bottleneck = the smallest of supply's two and demand

Pure and linear in the inventory: one pass over the targets, one over the nodes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..model.index import Index
from ..model.inventory import PriceTable
from ..model.services import ROLE_OF_KIND, LustreFs
from ..model.storage import data_devices

LATENCY = {
    "cache": "local, microseconds: a read from the node's own NVMe, no network",
    "lustre": "fabric, 100s of microseconds: RDMA to an OSS, then its devices",
    "archive": "object, milliseconds to minutes: S3 through the copytool; a restore copies the file back first",
}
"""Latency class of each tier, in words: the order of magnitude, and why."""


@dataclass(frozen=True, slots=True)
class Oss:
    """One server that serves OSTs: what its devices deliver, what its links carry."""

    server: str
    osts: int
    data_devices: float
    device_gbps: float
    ports: int  # declared InfiniBand ports
    cabled: int  # of which cabled
    link_gbps: float


@dataclass(frozen=True, slots=True)
class Tier:
    name: str  # cache | lustre | archive
    what: str
    raw_tb: float | None
    usable_tb: float | None
    read_gbps: float | None
    latency: str
    cost: float | None
    basis: str  # where the figures come from


@dataclass(frozen=True)
class FsStorage:
    fs: str
    targets: dict[str, int]  # kind -> count
    ost_raw_tb: float
    ost_usable_tb: float
    mdt_raw_tb: float
    mdt_usable_tb: float
    servers: tuple[Oss, ...]
    devices_gbps: float
    links_gbps: float
    degraded_gbps: float
    gpus: int
    demand_gbps: float
    bottleneck: str
    verdict: str
    tiers: tuple[Tier, ...]
    currency: str
    example_prices: bool
    notes: tuple[str, ...] = field(default=())

    @property
    def supply_gbps(self) -> float:
        return min(self.devices_gbps, self.links_gbps)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["servers"] = [asdict(s) for s in self.servers]
        out["tiers"] = [asdict(t) for t in self.tiers]
        out["supply_gbps"] = self.supply_gbps
        out["notes"] = list(self.notes)
        return out


def _per_tb(prices: PriceTable, key: str) -> float | None:
    return prices.items.get(f"storage/{key}/per_tb")


def storage_report(index: Index, prices: PriceTable) -> list[FsStorage]:
    """One report per Lustre file system that declares targets (a file system served elsewhere has no server
    side to size)."""
    return [_fs_report(index, fs, prices) for fs in index.inv.lustre if fs.targets]


def _fs_report(index: Index, fs: LustreFs, prices: PriceTable) -> FsStorage:
    sizing = index.inv.storage_sizing
    rates = sizing.device_read_gbps
    hardware, cat = index.hardware, index.cat
    kinds: dict[str, int] = {}
    raw = {"ost": 0.0, "mdt": 0.0}
    usable = {"ost": 0.0, "mdt": 0.0}
    per_server: dict[str, list[float]] = {}  # server -> [osts, data devices, device GB/s]
    ost_cost = 0.0
    unpriced: set[str] = set()
    for t in fs.targets:
        kinds[t.kind] = kinds.get(t.kind, 0) + 1
        hw = hardware.get(t.server)
        role = ROLE_OF_KIND[t.kind]
        dev = next((d for d in (hw.storage if hw else []) if d.role == role
                    and (t.device_kind is None or d.kind == t.device_kind)), None)
        if dev is None:  # a check error; sized as nothing
            continue
        data = data_devices(t.layout, t.devices)
        fit = data * dev.size_tb if t.size_tb is None else min(t.size_tb, data * dev.size_tb)
        bucket = "ost" if t.kind == "ost" else "mdt"
        raw[bucket] += t.devices * dev.size_tb
        usable[bucket] += fit
        price = _per_tb(prices, dev.kind)
        if price is None:
            unpriced.add(dev.kind)
        else:
            ost_cost += price * t.devices * dev.size_tb
        if t.kind == "ost":
            line = per_server.setdefault(t.server, [0, 0.0, 0.0])
            line[0] += 1
            line[1] += data
            line[2] += data * rates.of(dev.kind)
    servers = []
    for name, (osts, data, gbps) in per_server.items():
        ports = cabled = 0
        link = 0.0
        for hca in hardware[name].hcas if name in hardware else []:
            for p in hca.ports:
                if p.link_layer != "InfiniBand":
                    continue
                ports += 1
                cabled += (name, hca.name, p.port) in index.cable_at
                info = cat.rates.get(p.rate)
                link += info.gbps / 8 if info is not None else 0.0
        servers.append(Oss(name, int(osts), data, gbps, ports, cabled, link))
    devices_gbps = sum(s.device_gbps for s in servers)
    links_gbps = sum(s.link_gbps for s in servers)
    degraded = links_gbps - max((s.link_gbps for s in servers), default=0.0)
    gpus, demand = _demand(index, fs)
    bottleneck, verdict = _verdict(devices_gbps, links_gbps, demand, gpus, len(servers))
    notes = []
    short = [s.server for s in servers if s.cabled < s.ports]
    if short:
        notes.append(f"{len(short)} server(s) have declared ports not cabled ({', '.join(short[:4])}"
                     f"{', ...' if len(short) > 4 else ''}): the links figure counts declared ports")
    if unpriced:
        notes.append(f"no storage/<kind>/per_tb price for {', '.join(sorted(unpriced))}: the Lustre tier's cost "
                     "leaves them out")
    tiers = (_cache_tier(index, fs, prices), Tier(
        "lustre", f"{fs.name}: {kinds.get('ost', 0)} OSTs on {len(servers)} OSS", raw["ost"] + raw["mdt"],
        usable["ost"], min(devices_gbps, links_gbps), LATENCY["lustre"],
        None if unpriced else ost_cost,
        "raw: every target's devices; usable: the OSTs' after their layouts; read: min(OST devices, OSS links)"),
        _archive_tier(fs, prices))
    cache = tiers[0]
    if cache.read_gbps is not None and demand > min(devices_gbps, links_gbps):
        notes.append(f"the cache tier reads {cache.read_gbps:,.1f} GB/s on the nodes themselves "
                     f"({cache.read_gbps / demand:.1f}x demand): data attached to the PCC is fed at demand; the rest "
                     "waits on the OSS tier")
    return FsStorage(fs.name, kinds, raw["ost"], usable["ost"], raw["mdt"], usable["mdt"], tuple(servers),
                     devices_gbps, links_gbps, degraded, gpus, demand, bottleneck, verdict, tiers,
                     prices.currency, prices.example, tuple(notes))


def _demand(index: Index, fs: LustreFs) -> tuple[int, float]:
    """GPUs of the nodes that mount `fs`, and what they ask (per GPU: the profile's figure, else the default)."""
    sizing = index.inv.storage_sizing
    gpus, demand = 0, 0.0
    for node in index.inv.nodes:
        if fs.clients == "compute" and node.role != "compute":
            continue
        g = index.hardware[node.name].gpus
        if g is None or not g.count:
            continue
        gpus += g.count
        demand += g.count * sizing.profiles.get(node.profile or "", sizing.read_gbps_per_gpu)
    return gpus, demand


def _verdict(devices: float, links: float, demand: float, gpus: int, oss: int) -> tuple[str, str]:
    """Which of the three limits first, in words."""
    supply = min(devices, links)
    limit = "OST devices" if devices <= links else "OSS links"
    if gpus == 0:
        return limit, f"no GPU clients: the OSS tier delivers {supply:,.1f} GB/s, limited by its {limit}"
    if demand > supply:
        share = 100 * supply / demand if demand else 100.0
        return limit, (f"the {limit} limit: {supply:,.1f} GB/s delivered to {gpus:,} GPUs asking {demand:,.1f} GB/s "
                       f"({share:.0f}% of demand; {supply / gpus:.3f} GB/s a GPU): add OSS "
                       + ("links (ports or faster rates)" if limit == "OSS links" else "devices or servers")
                       + f" beyond the {oss}")
    return "GPU demand", (f"storage keeps up: {supply:,.1f} GB/s ({limit}) for {gpus:,} GPUs asking "
                          f"{demand:,.1f} GB/s ({supply / demand:.1f}x demand)")


def _cache_tier(index: Index, fs: LustreFs, prices: PriceTable) -> Tier:
    pcc = fs.pcc
    if pcc is None:
        return Tier("cache", "no PCC declared", None, None, None, LATENCY["cache"], None, "lustre[].pcc")
    rate = index.inv.storage_sizing.device_read_gbps.of(pcc.device_kind)
    roles = set(pcc.roles)
    nodes = 0
    raw = read = 0.0
    for node in index.inv.nodes:
        if node.role not in roles:
            continue
        devs = [d for d in index.hardware[node.name].storage if d.kind == pcc.device_kind and d.role == "cache"]
        if not devs:
            continue
        nodes += 1
        raw += sum(d.count * d.size_tb for d in devs)
        read += sum(d.count for d in devs) * rate
    price = _per_tb(prices, pcc.device_kind)
    return Tier("cache", f"PCC {pcc.size_tb:g} TB on {pcc.device_kind} of {nodes:,} nodes", raw,
                nodes * pcc.size_tb, read, LATENCY["cache"], None if price is None else price * raw,
                f"lustre[].pcc; the nodes' {pcc.device_kind} of role cache (raw: whole devices, of which the PCC "
                "takes size_tb a node)")


def _archive_tier(fs: LustreFs, prices: PriceTable) -> Tier:
    hsm = fs.hsm
    if hsm is None:
        return Tier("archive", "no HSM archive declared", None, None, None, LATENCY["archive"], None, "lustre[].hsm")
    k, m = hsm.erasure.data, hsm.erasure.coding
    usable = None if hsm.raw_tb is None else hsm.raw_tb * k / (k + m)
    price = _per_tb(prices, "object")
    return Tier("archive", f"HSM to S3 bucket {hsm.bucket}", hsm.raw_tb, usable,
                hsm.read_gbps, LATENCY["archive"],
                None if price is None or hsm.raw_tb is None else price * hsm.raw_tb,
                f"lustre[].hsm: raw_tb and read_gbps as declared, erasure {k}+{m}")
