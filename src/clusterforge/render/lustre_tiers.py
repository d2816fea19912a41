"""The cache and archive tiers on their nodes (docs/storage.md).

Cache (Lustre Persistent Client Cache, 2.13+), on each client of a file system with `pcc` whose role the cache
names:

    hosts/<node>/etc/systemd/system/<pcc mount>.mount           the cache's local file system (ext4 on the node's
                                                                 NVMe, `pcc.block_device`), when one is declared
    hosts/<node>/etc/systemd/system/lustre-pcc-<fsname>.service `lctl pcc add <fs mount> <pcc mount> --param
                                                                 "<rule> rwid=<id>"` (roid for readonly) once both
                                                                 are mounted; `lctl pcc del` when stopped

Archive (Lustre HSM through Lemur's lhsmd and its S3 data mover), on each declared agent node:

    hosts/<agent>/etc/lhsmd/agent                               the file system (client_device: the MGS NIDs),
                                                                 the S3 mover enabled
    hosts/<agent>/etc/lhsmd/lhsm-plugin-s3                      endpoint, region, the archive id and bucket
    hosts/<agent>/etc/systemd/system/lhsmd.service                 the agent's unit, as Lemur's own packaging runs it
                                                                 (/usr/sbin/lhsmd -config /etc/lhsmd/agent)
    hosts/<agent>/etc/systemd/system/lhsmd.service.d/clusterforge.conf
                                                                 where the mover reads its keys: the credentials
                                                                 file (AWS_SHARED_CREDENTIALS_FILE), or the
                                                                 variable the site's secret store sets

Lemur's configuration syntax and keys are its man pages' (lhsmd(1), lhsm-plugin-s3(1)). Every string from the
inventory is written as a JSON string literal, which HCL reads as the same string: inventory text stays data.
The keys themselves are never in the inventory, so never here. Pure.
"""

from __future__ import annotations

import json
from typing import Any

from ..model.services import LustreFs
from ..util.systemd_unit import mount_unit
from .fabric import FabricView
from .spec import FileSpec, host_file

MOUNT_ROOT = "/var/lib/lhsmd/roots"
S3_THREADS = 8
HANDLERS = 4


def _q(text: str) -> str:
    """A string literal for HCL (and systemd's double quotes): JSON's escaping."""
    return json.dumps(text)


def pcc_context(fs: LustreFs) -> dict[str, Any]:
    assert fs.pcc is not None
    pcc = fs.pcc
    key = "rwid" if pcc.mode == "readwrite" else "roid"
    return {"fs": fs.name, "fs_mount": fs.mount, "fs_unit": mount_unit(fs.mount),
            "pcc_mount": pcc.mount, "pcc_unit": mount_unit(pcc.mount),
            "device": pcc.block_device, "device_kind": pcc.device_kind, "mode": pcc.mode,
            "param": f"{pcc.rule} {key}={pcc.archive_id}", "size_tb": pcc.size_tb}


def hsm_context(fs: LustreFs, nids: tuple[str, ...]) -> dict[str, Any]:
    assert fs.hsm is not None
    hsm = fs.hsm
    creds = hsm.credentials
    return {"fs": fs.name, "client_device": _q(":".join(nids) + f":/{fs.name}"), "mount_root": _q(MOUNT_ROOT),
            "handlers": HANDLERS, "threads": S3_THREADS, "endpoint": _q(hsm.endpoint), "region": _q(hsm.region),
            "archive_name": _q(f"{fs.name}-{hsm.archive_id}"), "archive_id": hsm.archive_id,
            "bucket": _q(hsm.bucket), "prefix": _q(fs.name), "agents": list(hsm.agents),
            "credentials_file": creds.file, "credentials_env": creds.env}


def tier_files(fab: FabricView) -> list[FileSpec]:
    index = fab.index
    nodes = {n.name: n for n in index.inv.nodes}
    out: list[FileSpec] = []
    for fs, nids in zip(index.inv.lustre, index.addresses.nids, strict=True):
        if fs.pcc is not None:
            ctx = pcc_context(fs)
            for name, node in nodes.items():
                if not fs.client(name, node.role) or node.role not in fs.pcc.roles:
                    continue
                if ctx["device"] is not None:
                    out.append(host_file(name, f"/etc/systemd/system/{ctx['pcc_unit']}",
                                         "lustre-tiers/pcc.mount.j2", ctx))
                out.append(host_file(name, f"/etc/systemd/system/lustre-pcc-{fs.name}.service",
                                     "lustre-tiers/lustre-pcc.service.j2", ctx))
        if fs.hsm is not None:
            ctx = hsm_context(fs, nids)
            for agent in fs.hsm.agents:
                out.append(host_file(agent, "/etc/lhsmd/agent", "lustre-tiers/lhsmd-agent.j2", ctx))
                out.append(host_file(agent, "/etc/lhsmd/lhsm-plugin-s3", "lustre-tiers/lhsm-plugin-s3.j2", ctx))
                out.append(host_file(agent, "/etc/systemd/system/lhsmd.service", "lustre-tiers/lhsmd.service.j2",
                                     ctx))
                out.append(host_file(agent, "/etc/systemd/system/lhsmd.service.d/clusterforge.conf",
                                     "lustre-tiers/lhsmd-dropin.conf.j2", ctx))
    return out
