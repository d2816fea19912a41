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
from ..model.services import failover_of, target_name
from ..parse.lctl_hsm import MdtHsm
from ..parse.lctl_pcc import PccMount
from ..parse.lctl_recovery import TargetRecovery
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
                       "MGS NIDs and `dmesg` for the mount error", host=host))
            continue
        if (got.fsname is not None and got.fsname != fs.name) or got.mount != fs.mount:
            out.append(Finding(
                "LUSTRE-NOT-MOUNTED", "error", host,
                f"{host} mounts {got.fsname or '?'} at {got.mount}, declared {fs.name} at {fs.mount}",
                expected=f"{fs.name} at {fs.mount}", observed=f"{got.fsname or '?'} at {got.mount}",
                action="fix the client's fstab entry (the deploy writes it from the inventory) and remount", host=host))
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
                           "registered with the MGS", host=host))
            elif not s.active:
                out.append(Finding(
                    "LUSTRE-TARGET", "error", f"{host} {name}",
                    f"{host}: {name} ({serve}) is unusable from this client: {s.status}",
                    expected=f"{name} active", observed=s.status,
                    action=f"check {t.server} (`lctl dl`, `lctl get_param obdfilter.*.recovery_status`); "
                           + (f"if it is down, fail the target over to {partner}" if partner else
                              "the target has no failover partner") + "; on the client `lctl get_param "
                           "osc.*.state` shows the import", host=host))
        for key in sorted(set(shown) - set(declared)):
            name = f"{fs.name}-{key[0]}{key[1]:04x}"
            out.append(Finding(
                "LUSTRE-UNDECLARED", "warning", f"{host} {name}",
                f"{host}: lfs df shows {name}, which the inventory does not declare",
                observed=shown[key].status,
                action=f"declare it under lustre {fs.name} targets (or remove it from the file system)", host=host))
    return out


def hsm_servers(index: Index) -> set[str]:
    """Servers of a metadata target of a file system with an archive tier (where the HSM coordinator runs)."""
    return {s for fs in index.inv.lustre for s in fs.hsm_coordinators()}


def check_hsm(index: Index, host: str, seen: Sequence[MdtHsm]) -> list[Finding]:
    """Each MDT the host shows, of a file system with `hsm`: the coordinator enabled, and a copytool agent
    registered for the declared archive id (one per declared agent node expected; errors are a warning)."""
    out: list[Finding] = []
    by_name = {fs.name: fs for fs in index.inv.lustre if fs.hsm is not None}
    for mdt in seen:
        fs = by_name.get(mdt.fsname)
        if fs is None or fs.hsm is None:
            continue
        hsm = fs.hsm
        subject = f"{host} {mdt.target}"
        if mdt.control is not None and mdt.control != "enabled":
            out.append(Finding(
                "LUSTRE-HSM", "error", subject,
                f"{host}: {mdt.target}'s HSM coordinator is {mdt.control}: archive and restore requests wait",
                expected="enabled", observed=mdt.control,
                action=f"`lctl set_param -P mdt.{mdt.target}.hsm_control=enabled` (persistent, on the MGS)", host=host))
        serving = [a for a in mdt.agents if a.serves(hsm.archive_id)]
        agents = ", ".join(hsm.agents) or "the declared agent nodes"
        if not serving:
            out.append(Finding(
                "LUSTRE-HSM", "error", subject,
                f"{host}: no copytool is registered with {mdt.target} for archive {hsm.archive_id} "
                f"({len(mdt.agents)} agent(s) for other archives)",
                expected=f"{len(hsm.agents)} agent(s) for archive {hsm.archive_id}", observed=str(len(serving)),
                action=f"on {agents}: `systemctl status lhsmd` ({hsm.copytool}'s agent; the deploy's hsm component "
                       f"installs and starts it: `clusterforge deploy ENV --limit {','.join(hsm.agents)} --component "
                       f"hsm`), its journal, and that it reaches {hsm.endpoint}", host=host))
        elif len(serving) < len(hsm.agents):
            out.append(Finding(
                "LUSTRE-HSM", "warning", subject,
                f"{host}: {len(serving)} of the {len(hsm.agents)} declared copytool agents are registered with "
                f"{mdt.target} for archive {hsm.archive_id}",
                expected=str(len(hsm.agents)), observed=str(len(serving)),
                action=f"`systemctl status lhsmd` and its journal on each of {agents}: the agent not registered "
                       "failed to start or to mount the file system", host=host))
        for a in serving:
            if a.errors:
                out.append(Finding(
                    "LUSTRE-HSM", "warning", subject,
                    f"{host}: copytool agent {a.uuid} on {mdt.target} has {a.errors} failed request(s) "
                    f"({a.ok} ok, {a.current} running)",
                    observed=f"errors {a.errors}",
                    action=f"read the copytool's log on its agent node; check the bucket {hsm.bucket} at "
                           f"{hsm.endpoint} and the credentials it references", host=host))
    return out


def check_pcc(index: Index, host: str, seen: Sequence[PccMount]) -> list[Finding]:
    """Each file system with a cache tier the host is a cache client of (its role in `pcc.roles`): the client
    has the declared back-end attached (`lctl get_param llite.*.pcc`): the cache's mount point, in the declared
    mode with the declared id, with the declared auto-attach rule."""
    node = index.nodes[host]
    out: list[Finding] = []
    for fs in index.inv.lustre:
        pcc = fs.pcc
        if pcc is None or node.role not in pcc.roles or not fs.client(host, node.role):
            continue
        mounts = [m for m in seen if m.fsname == fs.name]
        if not mounts:
            continue  # not mounted: LUSTRE-NOT-MOUNTED (lfs df) says so
        unit = f"lustre-pcc-{fs.name}.service"
        attached = [d for m in mounts for d in m.datasets if d.path.rstrip("/") == pcc.mount.rstrip("/")]
        if not attached:
            others = ", ".join(d.path for m in mounts for d in m.datasets) or "none"
            out.append(Finding(
                "LUSTRE-PCC", "error", host,
                f"{host}: no cache back-end at {pcc.mount} is attached to {fs.name} (attached: {others}): its "
                f"reads and writes go to the OSTs", expected=pcc.mount, observed=others,
                action=f"check the cache's file system is mounted at {pcc.mount}, then `systemctl enable --now "
                       f"{unit}` (it runs `lctl pcc add`)", host=host))
            continue
        d = attached[0]
        ident = d.rwid if pcc.mode == "readwrite" else d.roid
        problems = []
        if pcc.mode not in d.modes:
            problems.append(f"mode {'/'.join(d.modes) or 'none'}, declared {pcc.mode}")
        if ident != pcc.archive_id:
            problems.append(f"{'rwid' if pcc.mode == 'readwrite' else 'roid'} {ident}, declared {pcc.archive_id}")
        if d.autocache.split() != pcc.rule.split():
            problems.append(f"auto-attach rule {d.autocache or 'none'!r}, declared {pcc.rule!r}")
        if problems:
            out.append(Finding(
                "LUSTRE-PCC", "error", host,
                f"{host}: the cache back-end at {pcc.mount} on {fs.name} is attached with " + "; ".join(problems),
                expected=f"{pcc.mode} id {pcc.archive_id} rule {pcc.rule}",
                observed=f"{'/'.join(d.modes) or 'none'} rwid {d.rwid} roid {d.roid} rule {d.autocache}",
                action=f"`lctl pcc del {fs.mount} {pcc.mount}`, then `systemctl restart {unit}` (it adds it as "
                       "rendered)", host=host))
    return out


def check_recovery(index: Index, host: str, seen: Sequence[TargetRecovery]) -> list[Finding]:
    """A server's targets as it serves them (`lctl get_param obdfilter.*.recovery_status mdt.*.recovery_status`):
    each declared target of this server is served here (else a warning: failed over, or down), none is served
    here that the inventory puts elsewhere than this server or its failover, and a target's recovery is over
    with every client back (a warning while it runs, or when clients were evicted)."""
    out: list[Finding] = []
    here = {t.target: t for t in seen}
    for fs in index.inv.lustre:
        if host not in fs.servers:
            continue
        for t in fs.targets:
            name = target_name(fs, t)
            other = failover_of(fs, t)
            got = here.get(name)
            if got is None:
                if t.server == host:
                    out.append(Finding(
                        "LUSTRE-TARGET-STATE", "warning", f"{host} {name}",
                        f"{host} does not serve its target {name}: failed over to {other or 'no partner'}, or down",
                        expected=f"served by {host}", observed="not mounted here",
                        action=f"`lfs df` on a client shows whether {name} is up; if it runs on {other}, fail it "
                               f"back once {host} is healthy (unmount it there, mount it here); if not, mount it here",
                        host=host))
                continue
            if host not in (t.server, other):
                out.append(Finding(
                    "LUSTRE-TARGET-STATE", "error", f"{host} {name}",
                    f"{host} serves {name}, which the inventory puts on {t.server} (failover {other or 'none'})",
                    expected=t.server, observed=host,
                    action=f"unmount {name} here and mount it on {t.server}; two servers must never mount it",
                    host=host))
            if got.status in ("RECOVERING", "WAITING", "WAITING_FOR_CLIENTS"):
                left = got.fields.get("time_remaining")
                conn = got.clients("connected_clients")
                out.append(Finding(
                    "LUSTRE-TARGET-STATE", "warning", f"{host} {name}",
                    f"{host} {name} is in recovery ({got.status}"
                    + (f", {conn[0]}/{conn[1]} clients reconnected" if conn else "")
                    + (f", {left} s left" if left else "") + "): its clients' I/O waits",
                    expected="COMPLETE", observed=got.status,
                    action="wait for the recovery window to end; clients that do not reconnect are evicted", host=host))
            done = got.clients("completed_clients")
            if got.status == "COMPLETE" and done and done[0] < done[1]:
                out.append(Finding(
                    "LUSTRE-TARGET-STATE", "warning", f"{host} {name}",
                    f"{host} {name}: {done[0]} of {done[1]} clients recovered; the others were evicted (their "
                    "uncommitted writes and locks are lost)", expected=f"{done[1]}/{done[1]}",
                    observed=f"{done[0]}/{done[1]}",
                    action="find the evicted clients (`lctl get_param osc.*.state` on them shows EVICTED) and "
                           "check their jobs", host=host))
    return out
