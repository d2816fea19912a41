"""The storage tiers of each Lustre file system (docs/storage.md): targets on storage servers within their
failover pairs, built on devices the servers have, with NIDs on the file system's rails; the Persistent
Client Cache on each client's local NVMe; the HSM archive's agent nodes; the sizing settings' profiles.

One issue per fault, every fault at once. Per-node faults of the cache tier (thousands of clients) are
reported once per cause, the nodes folded into a host list.
"""

from __future__ import annotations

from collections import defaultdict

from netaddr import AddrFormatError, IPAddress

from ..model.hardware import LocalDevice
from ..model.index import Index
from ..model.services import ROLE_OF_KIND, LustreFs, failover_of, partners, target_name
from ..model.storage import LAYOUT_MIN_DEVICES, LustreTarget, data_devices
from ..util.errors import InventoryIssue
from ..util.hostlist import compress
from ..util.systemd_unit import mount_unit_problem

CACHE_KINDS = ("nvme", "optane-pmem")
PCC_MIN = (2, 13)  # RW-PCC landed in Lustre 2.13
RO_PCC_MIN = (2, 16)  # RO-PCC in 2.16


def check(index: Index) -> list[InventoryIssue]:
    out: list[InventoryIssue] = []
    for i, fs in enumerate(index.inv.lustre):
        out += _mounts(i, fs)
        out += _targets(index, i, fs)
        if fs.pcc is not None:
            out += _pcc(index, i, fs)
        if fs.hsm is not None:
            out += _hsm(index, i, fs)
    out += _one_archive_per_agent(index)
    for name in index.inv.storage_sizing.profiles:
        if name not in index.profiles:
            out.append(InventoryIssue(("storage_sizing", "profiles", name),
                                      f"{name!r} is not a declared profile", rule="INV-REF"))
    return out


def _mounts(i: int, fs: LustreFs) -> list[InventoryIssue]:
    """A mount point systemd cannot name a mount unit for (its escaped name over 255 characters): the deploy
    writes `<escaped>.mount`, and systemd loads a mount unit only under its mount point's escaped name."""
    points: list[tuple[tuple[str | int, ...], str]] = [(("lustre", i, "mount"), fs.mount)]
    if fs.pcc is not None:
        points.append((("lustre", i, "pcc", "mount"), fs.pcc.mount))
    return [InventoryIssue(path, why, rule="INV-STORAGE")
            for path, point in points if (why := mount_unit_problem(point)) is not None]


def _server(index: Index, fs: LustreFs, name: str, path: tuple[str | int, ...], what: str) -> InventoryIssue | None:
    node = index.nodes.get(name)
    if node is None:
        return InventoryIssue(path, f"{what} {name!r} is not a declared node", rule="INV-REF")
    if node.role != "storage":
        return InventoryIssue(path, f"{what} {name} is a {node.role} node, not a storage server: a target is served "
                              "by a node of role storage", rule="INV-STORAGE")
    if name not in fs.servers:
        return InventoryIssue(path, f"{what} {name} is not a server of {fs.name} "
                              f"({', '.join(fs.servers) or 'none declared'})", rule="INV-STORAGE")
    return None


def _targets(index: Index, i: int, fs: LustreFs) -> list[InventoryIssue]:
    out: list[InventoryIssue] = []
    if not fs.targets:
        return out
    pair_of = partners(fs)
    seen: dict[tuple[str, int], int] = {}
    used: dict[tuple[str, str, str], list[tuple[int, int]]] = defaultdict(list)  # (server, role, kind) -> [(j, n)]
    mgs: list[int] = []
    for j, t in enumerate(fs.targets):
        path = ("lustre", i, "targets", j)
        name = target_name(fs, t)
        key = (t.kind, 0 if t.kind == "mgt" else t.index)
        if key in seen:
            out.append(InventoryIssue((*path, "index"), f"{name} is declared twice (also targets[{seen[key]}])",
                                      rule="INV-DUP"))
        else:
            seen[key] = j
        if t.kind == "mgt" or t.mgs:
            mgs.append(j)
        if t.mgs and t.kind != "mdt":
            out.append(InventoryIssue((*path, "mgs"), f"{name}: only an MDT can also hold the MGS "
                                      "(combined MGS/MDT); declare an mgt target instead", rule="INV-STORAGE"))
        bad = _server(index, fs, t.server, (*path, "server"), f"{name}'s server")
        if bad is not None:
            out.append(bad)
        if t.failover is not None:
            if t.failover == t.server:
                out.append(InventoryIssue((*path, "failover"), f"{name} fails over to its own server {t.server}",
                                          rule="INV-STORAGE"))
            elif (bad_f := _server(index, fs, t.failover, (*path, "failover"), f"{name}'s failover")) is not None:
                out.append(bad_f)
            elif pair_of.get(t.server) != t.failover:
                partner = pair_of.get(t.server)
                out.append(InventoryIssue(
                    (*path, "failover"),
                    f"{name} is on {t.server} with failover {t.failover}, outside {t.server}'s failover pair "
                    + (f"({t.server} + {partner})" if partner else f"({t.server} is in no pair of failover_pairs)")
                    + f": {t.failover} cannot reach the target's devices", rule="INV-STORAGE"))
        out += _nids(index, fs, t, path, name)
        out += _layout(index, t, path, name, used, j)
    out += _device_counts(index, i, fs, used)
    if fs.targets and len(mgs) != 1:
        out.append(InventoryIssue(
            ("lustre", i, "targets"),
            f"{fs.name} declares {len(mgs)} MGS targets "
            f"({', '.join(target_name(fs, fs.targets[j]) for j in mgs) or 'none'}): "
            "exactly one mgt target, or one MDT with mgs: true", rule="INV-STORAGE"))
    for kind, what in (("mdt", "MDT0000 (it holds the root directory)"), ("ost", "OST")):
        if not any(t.kind == kind and (kind == "ost" or t.index == 0) for t in fs.targets):
            out.append(InventoryIssue(("lustre", i, "targets"), f"{fs.name} has no {what}", rule="INV-STORAGE"))
    out += _mgs_nids(index, i, fs, mgs)
    return out


def _nids(index: Index, fs: LustreFs, t: LustreTarget, path: tuple[str | int, ...], name: str) -> list[InventoryIssue]:
    """The serving servers need a NID on each of the file system's interfaces (an IPoIB address on its rail)."""
    if not fs.lnet.startswith("o2ib"):
        return []
    out: list[InventoryIssue] = []
    rails = {ib.name: ib.rail for ib in index.inv.addressing.ipoib}
    for field, server in (("server", t.server), ("failover", failover_of(fs, t))):
        if server is None or server not in index.nodes:
            continue
        missing = [f for f in fs.interfaces if f in rails and (server, f) not in index.addresses.ipoib]
        if missing:
            out.append(InventoryIssue(
                (*path, field),
                f"{server} serves {name} but has no {'/'.join(missing)} address (no HCA on rail "
                f"{'/'.join(str(rails[f]) for f in missing)}): it would have no NID on {fs.lnet} for the clients",
                rule="INV-STORAGE"))
    return out


def _layout(index: Index, t: LustreTarget, path: tuple[str | int, ...], name: str,
            used: dict[tuple[str, str, str], list[tuple[int, int]]], j: int) -> list[InventoryIssue]:
    """The layout has the devices it needs, the size fits what it leaves, and the devices are counted."""
    out: list[InventoryIssue] = []
    least = LAYOUT_MIN_DEVICES[t.layout]
    if t.devices < least or (t.layout == "raid10" and t.devices % 2):
        out.append(InventoryIssue((*path, "devices"), f"{name}: {t.layout} needs "
                                  + ("an even number of devices, 4 or more" if t.layout == "raid10"
                                     else f"at least {least} devices") + f", {t.devices} given", rule="INV-STORAGE"))
    hw = index.hardware.get(t.server)
    if hw is None:
        return out
    role = ROLE_OF_KIND[t.kind]
    mine = [d for d in hw.storage if d.role == role and (t.device_kind is None or d.kind == t.device_kind)]
    if not mine:
        kinds = f"{t.device_kind} " if t.device_kind else ""
        out.append(InventoryIssue((*path, "devices"), f"{name}: {t.server} has no {kinds}devices of role {role} "
                                  f"in its storage (has: {_devices(hw.storage)})", rule="INV-STORAGE"))
        return out
    dev = mine[0]
    used[(t.server, role, dev.kind)].append((j, t.devices))
    usable = data_devices(t.layout, t.devices) * dev.size_tb
    if t.size_tb is not None and t.size_tb > usable + 1e-9:
        out.append(InventoryIssue((*path, "size_tb"), f"{name}: {t.size_tb:g} TB does not fit {t.devices} x "
                                  f"{dev.size_tb:g} TB {dev.kind} in {t.layout} ({usable:g} TB usable)",
                                  rule="INV-STORAGE"))
    return out


def _devices(storage: list[LocalDevice]) -> str:
    return ", ".join(f"{d.count} x {d.size_tb:g} TB {d.kind} {d.role}" for d in storage) or "none"


def _device_counts(index: Index, i: int, fs: LustreFs,
                   used: dict[tuple[str, str, str], list[tuple[int, int]]]) -> list[InventoryIssue]:
    """A server's targets use no more devices of a role and kind than it has (reported at the first target past
    them)."""
    out: list[InventoryIssue] = []
    for (server, role, kind), uses in used.items():
        have = sum(d.count for d in index.hardware[server].storage if d.role == role and d.kind == kind)
        total = 0
        for j, n in uses:
            total += n
            if total > have:
                t = fs.targets[j]
                out.append(InventoryIssue(
                    ("lustre", i, "targets", j, "devices"),
                    f"{target_name(fs, t)}: {server}'s targets use {sum(n for _, n in uses)} {kind} devices of role "
                    f"{role}, it has {have}", rule="INV-STORAGE"))
                break
    return out


def _mgs_nids(index: Index, i: int, fs: LustreFs, mgs: list[int]) -> list[InventoryIssue]:
    """The clients' MGS NIDs point at the MGS target's server or its failover partner. A NID naming no server
    of the file system at all is check/services.py's and check/addressing.py's to report."""
    if len(mgs) != 1 or not fs.lnet.startswith("o2ib"):
        return []
    t = fs.targets[mgs[0]]
    hosts = [h for h in (t.server, failover_of(fs, t)) if h is not None]
    ipoib = index.addresses.ipoib
    owner = {ipoib[(s, f)]: s for s in fs.servers for f in fs.interfaces if (s, f) in ipoib}
    out: list[InventoryIssue] = []
    for j, nid in enumerate(fs.mgs_nids):
        host = nid.split("@", 1)[0]
        if host not in index.nodes:
            try:
                host = owner.get(int(IPAddress(host)), "")
            except (AddrFormatError, ValueError):
                continue
        if host in fs.servers and host not in hosts:
            out.append(InventoryIssue(
                ("lustre", i, "mgs_nids", j),
                f"MGS NID {nid} is {host}'s, but {target_name(fs, t)} (the MGS) is served by "
                f"{' or '.join(hosts)}", rule="INV-LNET"))
    return out


def _version(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit())
        if not digits:
            return None
        parts.append(int(digits))
    return tuple(parts)


def _pcc(index: Index, i: int, fs: LustreFs) -> list[InventoryIssue]:
    pcc = fs.pcc
    assert pcc is not None
    path = ("lustre", i, "pcc")
    out: list[InventoryIssue] = []
    if pcc.device_kind not in CACHE_KINDS:
        out.append(InventoryIssue((*path, "device_kind"), f"PCC on {pcc.device_kind}: the cache must be local NVMe "
                                  "(or persistent memory); a cache slower than the file system it caches "
                                  "only adds a copy", rule="INV-STORAGE"))
    version = _version(index.inv.software.lustre_client)
    need = RO_PCC_MIN if pcc.mode == "readonly" else PCC_MIN
    if version is not None and version < need:
        out.append(InventoryIssue((*path, "mode"), f"{pcc.mode} PCC needs Lustre {need[0]}.{need[1]} or later "
                                  f"clients; software.lustre_client is {index.inv.software.lustre_client}",
                                  rule="INV-STORAGE"))
    if fs.hsm is not None and fs.hsm.archive_id == pcc.archive_id:
        out.append(InventoryIssue((*path, "archive_id"), f"PCC back-end id {pcc.archive_id} is also the HSM "
                                  "archive's id: the coordinator would hand cache attachments to the copytool",
                                  rule="INV-STORAGE"))
    clients = set(pcc.roles)
    none: list[str] = []
    small: dict[float, list[str]] = defaultdict(list)
    for node in index.inv.nodes:
        if node.role not in clients:
            continue
        have = sum(d.count * d.size_tb for d in index.hardware[node.name].storage
                   if d.kind == pcc.device_kind and d.role == "cache")
        if have == 0:
            none.append(node.name)
        elif have + 1e-9 < pcc.size_tb:
            small[have].append(node.name)
    if none:
        out.append(InventoryIssue((*path, "device_kind"), f"{compress(none)} ({len(none)} node(s)) have no local "
                                  f"{pcc.device_kind} of role cache for the PCC", rule="INV-STORAGE"))
    for have, names in sorted(small.items()):
        out.append(InventoryIssue((*path, "size_tb"), f"{pcc.size_tb:g} TB of PCC does not fit {compress(names)} "
                                  f"({len(names)} node(s)): {have:g} TB of {pcc.device_kind} cache each",
                                  rule="INV-STORAGE"))
    return out


def _hsm(index: Index, i: int, fs: LustreFs) -> list[InventoryIssue]:
    hsm = fs.hsm
    assert hsm is not None
    path = ("lustre", i, "hsm")
    out: list[InventoryIssue] = []
    if not hsm.agents:
        out.append(InventoryIssue((*path, "agents"), f"{fs.name}'s HSM archive has no agent node: nothing would run "
                                  "the copytool, and archive and restore requests would wait forever",
                                  rule="INV-STORAGE"))
    for j, name in enumerate(hsm.agents):
        if name not in index.nodes:
            out.append(InventoryIssue((*path, "agents", j), f"HSM agent {name!r} is not a declared node",
                                      rule="INV-REF"))
            continue
        missing = [f for f in fs.interfaces if fs.lnet.startswith("o2ib") and (name, f) not in index.addresses.ipoib]
        if missing:
            out.append(InventoryIssue((*path, "agents", j), f"HSM agent {name} has no {'/'.join(missing)} address: "
                                      f"the copytool mounts {fs.name} over {fs.lnet}", rule="INV-STORAGE"))
    if hsm.agents and len(set(hsm.agents)) < len(hsm.agents):
        out.append(InventoryIssue((*path, "agents"), "an agent is named twice", rule="INV-DUP"))
    sw = index.inv.software
    unpinned = [f"software.{field} ({what})" for field, what in (
        ("lemur", "lhsmd and its S3 mover: the packages lemur-hsm-agent and lemur-data-movers"),
        ("lustre_client", "the Lustre client lhsmd mounts the file system with"))
        if getattr(sw, field) is None]
    if unpinned:
        out.append(InventoryIssue(path, f"{fs.name}'s HSM archive runs Lemur's copytool on its agents, and "
                                  f"{' and '.join(unpinned)} {'is' if len(unpinned) == 1 else 'are'} not pinned: "
                                  "the deploy would install nothing to run it", rule="INV-STORAGE"))
    return out


def _one_archive_per_agent(index: Index) -> list[InventoryIssue]:
    """lhsmd reads one configuration (/etc/lhsmd/agent) with one `client_device`: a node is the copytool of one
    file system's archive at most."""
    out: list[InventoryIssue] = []
    first: dict[str, str] = {}
    for i, fs in enumerate(index.inv.lustre):
        for j, name in enumerate(fs.hsm.agents if fs.hsm else ()):
            if name in first and first[name] != fs.name:
                out.append(InventoryIssue(("lustre", i, "hsm", "agents", j),
                                          f"{name} is already the HSM agent of {first[name]}: lhsmd serves one file "
                                          "system a node (one /etc/lhsmd/agent, one client_device)",
                                          rule="INV-STORAGE"))
            first.setdefault(name, fs.name)
    return out
