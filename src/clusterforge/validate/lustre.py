"""A Lustre client's view of its file systems (`lfs df`) against the inventory (docs/storage.md).

For every file system the host is a client of (compute nodes, or every node with `clients: all`; never its
own servers): it is mounted at the declared mount point with the declared fsname, and every declared MDT and
OST is there and usable from this client. An inactive or unreachable target names the server that serves it
and its failover partner: the repair starts there. Targets the client shows that the inventory lacks are a
warning (the inventory is behind the file system). A file system whose `targets` are not declared (servers
managed elsewhere) is checked for its mount only.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model.index import Index
from ..model.services import failover_of
from ..parse.lfs_df import LfsFilesystem
from .findings import Finding


def lustre_clients(index: Index, host: str) -> list[str]:
    """Names of the file systems `host` mounts as a client."""
    node = index.nodes[host]
    return [fs.name for fs in index.inv.lustre if fs.client(host, node.role)]


def check_lfs_df(index: Index, host: str, seen: Sequence[LfsFilesystem]) -> list[Finding]:
    out: list[Finding] = []
    mine = set(lustre_clients(index, host))
    for fs in index.inv.lustre:
        if fs.name not in mine:
            continue
        got = next((f for f in seen if f.mount == fs.mount), None) or next(
            (f for f in seen if f.fsname == fs.name), None)
        if got is None:
            out.append(Finding(
                "LUSTRE-NOT-MOUNTED", "error", host,
                f"{host} does not mount Lustre {fs.name} at {fs.mount} (lfs df shows "
                f"{', '.join(str(f.mount) for f in seen) or 'no Lustre file system'})",
                expected=f"{fs.name} at {fs.mount}", observed=", ".join(str(f.mount) for f in seen) or "none",
                action=f"`mount -t lustre {fs.name}` per /etc/fstab (the deploy writes it); check `lctl ping` to the "
                       "MGS NIDs and `dmesg` for the mount error"))
            continue
        if (got.fsname is not None and got.fsname != fs.name) or got.mount != fs.mount:
            out.append(Finding(
                "LUSTRE-NOT-MOUNTED", "error", host,
                f"{host} mounts {got.fsname or '?'} at {got.mount}, declared {fs.name} at {fs.mount}",
                expected=f"{fs.name} at {fs.mount}", observed=f"{got.fsname or '?'} at {got.mount}",
                action="fix the client's fstab entry (the deploy writes it from the inventory) and remount"))
        if not fs.targets:
            continue
        declared = {(t.kind.upper(), t.index): t for t in fs.targets if t.kind in ("mdt", "ost")}
        shown = {(t.kind, t.index): t for t in got.targets}
        for key, t in sorted(declared.items()):
            name = f"{fs.name}-{key[0]}{key[1]:04x}"
            partner = failover_of(fs, t)
            serve = f"served by {t.server}" + (f", failover {partner}" if partner else "")
            s = shown.get(key)
            if s is None:
                out.append(Finding(
                    "LUSTRE-TARGET", "error", f"{host} {name}",
                    f"{host}: {name} ({serve}) is not in lfs df",
                    expected=f"{name} active", observed="absent",
                    action=f"check the target is formatted and mounted on {t.server} (`lctl dl`), and that it "
                           "registered with the MGS"))
            elif not s.active:
                out.append(Finding(
                    "LUSTRE-TARGET", "error", f"{host} {name}",
                    f"{host}: {name} ({serve}) is unusable from this client: {s.status}",
                    expected=f"{name} active", observed=s.status,
                    action=f"check {t.server} (`lctl dl`, `lctl get_param obdfilter.*.recovery_status`); "
                           + (f"if it is down, fail the target over to {partner}" if partner else
                              "the target has no failover partner") + "; on the client `lctl get_param "
                           "osc.*.state` shows the import"))
        for key in sorted(set(shown) - set(declared)):
            name = f"{fs.name}-{key[0]}{key[1]:04x}"
            out.append(Finding(
                "LUSTRE-UNDECLARED", "warning", f"{host} {name}",
                f"{host}: lfs df shows {name}, which the inventory does not declare",
                observed=shown[key].status,
                action=f"declare it under lustre {fs.name} targets (or remove it from the file system)"))
    return out
