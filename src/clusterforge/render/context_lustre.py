"""Lustre: LNet configuration for clients and servers, systemd mount units for clients.

Both LNet forms are written, for the two ways hosts bring LNet up:
`/etc/modprobe.d/lustre.conf` (`options lnet networks=...`, read when the module loads)
and `/etc/lnet.conf` (YAML that lnet.service feeds to `lnetctl import`; lnet.service
runs `lnetctl lnet configure` without `--all`, so the two never configure a net twice).
Clients of a file system are its `clients` role set (compute, or all nodes) less its
servers; a client mounts it with a `.mount` unit named after the mount point.
"""

from __future__ import annotations

from typing import Any

from ..model.services import LustreFs
from ..util.systemd_unit import mount_unit
from .fabric import FabricView
from .spec import FileSpec, host_file


def clients(fab: FabricView, fs: LustreFs) -> list[str]:
    return [n.name for n in fab.index.inv.nodes if fs.client(n.name, n.role)]


def lnet_nets(fab: FabricView) -> dict[str, dict[str, list[str]]]:
    """node -> LNet net -> interfaces, for every client, server and HSM agent (lhsmd mounts the file system) of
    every file system."""
    out: dict[str, dict[str, list[str]]] = {}
    for fs in fab.index.inv.lustre:
        for node in [*fs.servers, *clients(fab, fs), *(fs.hsm.agents if fs.hsm else ())]:
            nets = out.setdefault(node, {})
            ifaces = nets.setdefault(fs.lnet, [])
            ifaces += [i for i in fs.interfaces if i not in ifaces]
    return out


def lnet_context(node: str, nets: dict[str, list[str]]) -> dict[str, Any]:
    networks = ",".join(f"{net}({','.join(ifaces)})" for net, ifaces in nets.items())
    return {"node": node, "networks": networks,
            "nets": [{"net": net, "interfaces": ifaces} for net, ifaces in nets.items()]}


def mount_context(fs: LustreFs, nids: tuple[str, ...]) -> dict[str, Any]:
    """`nids`: the MGS NIDs with server names resolved (`Addresses.nids`)."""
    return {"fs": fs.name, "what": ":".join(nids) + f":/{fs.name}", "where": fs.mount,
            "options": fs.options}


def lustre_files(fab: FabricView) -> list[FileSpec]:
    out: list[FileSpec] = []
    for node, nets in lnet_nets(fab).items():
        ctx = lnet_context(node, nets)
        out.append(host_file(node, "/etc/modprobe.d/lustre.conf", "lustre/lustre.conf.j2", ctx))
        out.append(host_file(node, "/etc/lnet.conf", "lustre/lnet.conf.j2", ctx))
    for fs, nids in zip(fab.index.inv.lustre, fab.index.addresses.nids, strict=True):
        unit = mount_unit(fs.mount)
        ctx = mount_context(fs, nids)
        for node in clients(fab, fs):
            out.append(host_file(node, f"/etc/systemd/system/{unit}", "lustre/lustre.mount.j2", ctx))
    return out
