"""The Lustre servers' side (docs/storage.md): each declared target's format and mount, on its server and its
failover partner. Formatting is never a deploy step: these files describe it, and `cf-lustre-format` does it
only when asked by name, on a device that holds no file system, once.

    hosts/<server>/etc/clusterforge/lustre/<target>.json      the target: device, mkfs.lustre argv, mount point,
                                                               primary and failover server (both servers)
    hosts/<server>/etc/systemd/system/<mount point>.mount      the target's mount (Type=lustre) at
                                                               /mnt/lustre/<fsname>/<OST0007|MDT0000|MGT>;
                                                               enabled on the primary only, once formatted: the
                                                               failover server mounts it when the HA manager
                                                               fails the target over
    hosts/<server>/usr/local/lib/clusterforge/cf-lustre-format the format step (stdlib Python, below)

A target is named as Lustre names it (`<fsname>-MDT<hex4>`, `<fsname>-OST<hex4>`; `<fsname>-MGT` for a
separate management target: model/services.target_name). mkfs.lustre's argv
(lustre/utils/mkfs_lustre.c's options): `--fsname`, `--mgs` / `--mdt` / `--ost`, `--index`, one `--mgsnode` per
MGS NID (failover MGS: each its own option), one `--servicenode` per server that may serve the target (the
primary, then its failover partner: both NIDs on the file system's LNet network), the device last. Targets
without a `block_device` are described in the model only (nothing to format). Pure.
"""

from __future__ import annotations

import json
from typing import Any

from ..model.index import Index
from ..model.services import LustreFs, failover_of, target_name
from ..model.storage import LustreTarget
from ..util.systemd_unit import mount_unit
from .fabric import FabricView
from .spec import FileSpec, host_file

CONFIG_DIR = "/etc/clusterforge/lustre"
FORMAT = "/usr/local/lib/clusterforge/cf-lustre-format"
MOUNT_ROOT = "/mnt/lustre"
MARKER_DIR = "/var/lib/clusterforge/lustre"


def server_nid(index: Index, fs: LustreFs, server: str) -> str | None:
    """`<server's address on the file system's first interface>@<lnet>`; None without one."""
    if not fs.interfaces:
        return None
    ip = index.addresses.ipoib.get((server, fs.interfaces[0]))
    return None if ip is None else f"{index.addresses.text(ip)}@{fs.lnet}"


def mkfs_argv(index: Index, fs: LustreFs, t: LustreTarget, mgs_nids: tuple[str, ...]) -> list[str]:
    """mkfs.lustre's argv for `t` (the device last)."""
    assert t.block_device is not None
    argv = ["mkfs.lustre"]
    if t.kind == "mgt":
        argv.append("--mgs")
    else:
        argv += [f"--fsname={fs.name}", f"--{t.kind}", f"--index={t.index}"]
        if t.kind == "mdt" and t.mgs:
            argv.append("--mgs")
        else:
            argv += [f"--mgsnode={nid}" for nid in mgs_nids]
    servers = [t.server, *([p] if (p := failover_of(fs, t)) else [])]
    argv += [f"--servicenode={nid}" for s in servers if (nid := server_nid(index, fs, s)) is not None]
    return [*argv, t.block_device]


def target_context(index: Index, fs: LustreFs, t: LustreTarget, mgs_nids: tuple[str, ...]) -> dict[str, Any]:
    name = target_name(fs, t)
    return {"target": name, "fsname": fs.name, "kind": t.kind, "index": t.index, "device": t.block_device,
            "mountpoint": f"{MOUNT_ROOT}/{fs.name}/{name.removeprefix(fs.name + '-')}", "primary": t.server,
            "failover": failover_of(fs, t),
            "mkfs": mkfs_argv(index, fs, t, mgs_nids), "marker": f"{MARKER_DIR}/{name}.formatted"}


def target_files(fab: FabricView) -> list[FileSpec]:
    index = fab.index
    out: list[FileSpec] = []
    servers: set[str] = set()
    for fs, nids in zip(index.inv.lustre, index.addresses.nids, strict=True):
        for t in fs.targets:
            if t.block_device is None:
                continue
            ctx = target_context(index, fs, t, nids)
            unit = mount_unit(ctx["mountpoint"])
            for server, primary in ((t.server, True), *(((ctx["failover"], False),) if ctx["failover"] else ())):
                servers.add(server)
                out.append(host_file(server, f"{CONFIG_DIR}/{ctx['target']}.json",
                                     "lustre-server/target.json.j2", {"json": json.dumps(ctx, indent=1)}))
                out.append(host_file(server, f"/etc/systemd/system/{unit}", "lustre-server/target.mount.j2",
                                     {**ctx, "enabled_here": primary, "server": server}))
    for server in sorted(servers):
        out.append(host_file(server, FORMAT, "lustre-server/cf-lustre-format.py.j2", {"config_dir": CONFIG_DIR}))
    return out
