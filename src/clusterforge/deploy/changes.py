"""Facts in, changes out: the pure heart of every operation.

`component_changes(component, facts)` says what must change on a host for one component
(files, packages, holds, services, modules, handlers), each `Change` carrying the shell
commands that make it (argv-quoted, run by the engine) and, for files, a unified diff.
A dry run prints these; a real run executes them. Nothing here talks to a host.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from .component import RETIRE, Component, ManagedFile
from .desired import merge_block
from .facts import HostFacts
from .firewall import HANDLER as FIREWALL_HANDLER
from .firewall import OPEN_SCRIPT as FIREWALL_OPEN
from .firewall import SERVICE as FIREWALL_SERVICE
from .packages import Pin
from .pkgmgr import APT, PackageManager, manager


@dataclass(frozen=True)
class Change:
    component: str
    kind: str
    """file | package | hold | service | module | handler"""
    target: str
    detail: str
    commands: tuple[str, ...] = ()
    diff: str = ""
    upload: bytes | None = None
    """File content to upload (to `target` + `.cf-new`) before `commands` run."""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.component, self.kind, self.target)


def desired_bytes(f: ManagedFile, facts: HostFacts) -> bytes:
    """What the file must contain; a managed block depends on the host's current file."""
    if not f.block:
        return f.content.encode("utf-8")
    fact = facts.files.get(f.dest)
    current = fact.content.decode("utf-8", "replace") if fact is not None and fact.content is not None else ""
    return merge_block(current, f.content).encode("utf-8")


def file_change(component: str, f: ManagedFile, facts: HostFacts, *, selinux: bool = False) -> Change | None:
    """What writing `f` takes, or None when the host has it already. `selinux`: the host runs SELinux (EL): the
    file, once in place, gets its policy's context (`restorecon -F`), as a file a package installs has."""
    data = desired_bytes(f, facts)
    fact = facts.files.get(f.dest)
    sha = hashlib.sha256(data).hexdigest()
    if fact is not None and fact.sha256 == sha and fact.mode == f.mode:
        return None
    if fact is None:
        detail = f"create (mode {f.mode:o})"
    elif fact.sha256 != sha:
        detail = "update content" + (f", mode {fact.mode:o} -> {f.mode:o}" if fact.mode != f.mode else "")
    else:
        detail = f"mode {fact.mode:o} -> {f.mode:o}"
    diff = "" if f.secret else _diff(f.dest, fact.content if fact else None, data)
    tmp = shlex.quote(f.dest + ".cf-new")
    dest = shlex.quote(f.dest)
    # put in place after the upload (change_lines): a bind-mounted file (a container's /etc/hosts)
    # cannot be replaced by rename, so it is copied in place
    commands: tuple[str, ...] = (f"chmod {f.mode:o} {tmp} && {{ mv -f {tmp} {dest} 2>/dev/null || "
                f"{{ cat {tmp} > {dest} && chmod {f.mode:o} {dest} && rm -f {tmp}; }}; }}",)
    if selinux:  # a renamed temporary keeps the context it was created with (/etc's default, not the file's)
        commands += (f"restorecon -F {dest}",)
    return Change(component, "file", f.dest, detail, commands, diff, data)


def change_lines(ch: Change) -> list[str]:
    """The shell lines that apply a change, for both the runner's script and pyinfra's operation: a
    file's directory, its content uploaded inline (base64) to `<path>.cf-new`, then its commands."""
    if ch.upload is None:
        return list(ch.commands)
    parent = shlex.quote(ch.target.rsplit("/", 1)[0] or "/")
    tmp = shlex.quote(ch.target + ".cf-new")
    return [f"mkdir -p {parent}", f"printf %s {base64.b64encode(ch.upload).decode()} | base64 -d > {tmp}",
            *ch.commands]


def _diff(path: str, old: bytes | None, new: bytes) -> str:
    a = [] if old is None else old.decode("utf-8", "replace").splitlines(keepends=True)
    b = new.decode("utf-8", "replace").splitlines(keepends=True)
    return "".join(difflib.unified_diff(a, b, fromfile=f"{path} (host)" if old is not None else "/dev/null",
                                        tofile=f"{path} (inventory)"))


def package_changes(component: str, pins: tuple[Pin, ...], facts: HostFacts, pm: PackageManager = APT,
                    streams: tuple[str, ...] = ()) -> list[Change]:
    """Install/upgrade/downgrade to the pin (one transaction, after enabling `streams` on dnf), then hold what
    is not held."""
    out: list[Change] = []
    need = []
    for pin in pins:
        have = facts.package_version(pin.package)
        if not pm.matches(pin.version, have):
            need.append(pin)
            verb = "install" if have is None else f"{have} ->"
            out.append(Change(component, "package", pin.package, f"{verb} {pin.version}"))
    if need:
        cmd = pm.install([(p.package, p.version) for p in need])
        first = out[0]
        out[0] = Change(first.component, first.kind, first.target, first.detail,
                        ((pm.enable_module(streams),) if streams else ()) + (cmd,))
    # a package being installed at another version loses its dnf lock first (pm.install): locked again here
    moving = {p.package for p in need} if pm.name == "dnf" else set()
    holds = [p for p in pins if p.hold and (p.package in moving or not (
        (fact := facts.packages.get(p.package)) is not None and fact.held))]
    for i, pin in enumerate(holds):
        cmd_hold = (pm.hold([p.package for p in holds], [p.version for p in holds]),) if i == 0 else ()
        out.append(Change(component, "hold", pin.package, "hold at pinned version", cmd_hold))
    return out


def unpinned_changes(component: str, packages: tuple[str, ...], facts: HostFacts,
                     pm: PackageManager = APT) -> list[Change]:
    missing = [p for p in packages if facts.package_version(p) is None]
    if not missing:
        return []
    cmd = pm.install([(p, None) for p in missing])
    return [Change(component, "package", p, "install", (cmd,) if i == 0 else ()) for i, p in enumerate(missing)]


def service_changes(component: str, services: tuple[str, ...], facts: HostFacts) -> list[Change]:
    """Enable and start units; hosts without systemd (containers) are left alone (reported once)."""
    if not facts.systemd:
        return []
    out = []
    for unit in services:
        enabled, active = facts.services.get(unit, ("", ""))
        if enabled in ("enabled", "static", "generated", "alias") and active == "active":
            continue
        verb = "enable --now" if enabled not in ("enabled", "static", "generated", "alias") else "start"
        out.append(Change(component, "service", unit, f"{enabled or 'unknown'}/{active or 'unknown'} -> "
                          "enabled/active", (f"systemctl {verb} {shlex.quote(unit)}",)))
    return out


def module_changes(component: str, modules: tuple[str, ...], facts: HostFacts) -> list[Change]:
    """Load modules that depend on the GPU driver (nvidia-peermem) once the driver is loaded."""
    if not facts.nvidia_loaded:
        return []
    return [Change(component, "module", m, "load", (f"modprobe {shlex.quote(m)}",))
            for m in modules if m not in facts.modules]


MASTER_WAIT_S = 60
"""How long the deploy waits, after starting the highest-priority SM's OpenSM, for an SM to answer as MASTER
before it starts the standbys' (who start anyway then: a subnet needs an SM more than it needs the right one)."""

WAIT_MASTER_SCRIPT = (
    "command -v sminfo >/dev/null || { echo 'sminfo not installed: not waiting for a master SM'; exit 0; }; "
    f'i=0; while [ "$i" -lt {MASTER_WAIT_S} ]; do sminfo 2>/dev/null | grep -q SMINFO_MASTER && exit 0; '
    f'sleep 1; i=$((i + 1)); done; echo "no master SM answered in {MASTER_WAIT_S} s: the standbys start anyway"'
)
"""Run on the highest-priority SM node after its OpenSM started: fixed text, no inventory value in it."""


def starts_opensm(changes: Sequence[Change]) -> bool:
    """The changes start (or restart) OpenSM on this host: a service enabled/started, or the handler's start."""
    return any(c.component == "opensm" and (c.kind == "service" or (c.kind == "handler" and c.detail == "start"))
               for c in changes)


def handler_change(component: Component, facts: HostFacts, changed: Sequence[str] = ()) -> Change | None:
    """What a changed configuration file of `component` triggers (None: nothing to do here). `changed`: the
    destinations of its files that change in this run (the `units` handler acts on their units only)."""
    h = component.handler
    if h == "units":
        return units_change(component, facts, changed)
    if h == "opensm-resweep":
        pids = facts.processes.get("opensm", [])
        if pids:
            return Change(component.name, "handler", "opensm", "re-sweep (SIGHUP re-reads the config)",
                          (f"kill -HUP {' '.join(str(p) for p in pids)}",))
        if facts.systemd:  # its units: opensm, or opensm-plane@<P> per rail plane
            units = " ".join(shlex.quote(u) for u in component.services) or "opensm"
            return Change(component.name, "handler", "opensm", "start", (f"systemctl restart {units}",))
        return None
    if h == "systemd-reload" and facts.systemd:
        return Change(component.name, "handler", "systemd", "daemon-reload", ("systemctl daemon-reload",))
    if h == FIREWALL_HANDLER:  # the service file changed: add it to the default zone (deploy/firewall.py)
        return Change(component.name, "handler", "firewalld", f"add service {FIREWALL_SERVICE} to the default zone",
                      (FIREWALL_OPEN,))
    if h == "netplan-apply" and "netplan" in facts.binaries:
        return Change(component.name, "handler", "netplan", "apply", ("netplan apply",))
    if h == "timesync-restart" and facts.systemd:
        return Change(component.name, "handler", "systemd-timesyncd", "try-restart",
                      ("systemctl try-restart systemd-timesyncd",))
    return None


def units_change(component: Component, facts: HostFacts, changed: Sequence[str]) -> Change | None:
    """Restart (or reload) exactly the units whose files change, after a daemon-reload when one of the
    changed files is a unit or drop-in; nothing on a host without systemd."""
    if not facts.systemd:
        return None
    files = [f for f in component.files if f.dest in set(changed) and f.unit]
    restart = sorted({f.unit for f in files if not f.reload})
    reload = sorted({f.unit for f in files if f.reload} - set(restart))
    if not restart and not reload:
        return None
    commands = ["systemctl daemon-reload"] if any("/systemd/system/" in f.dest for f in files) else []
    commands += [f"systemctl restart {' '.join(shlex.quote(u) for u in restart)}"] if restart else []
    commands += [f"systemctl reload {' '.join(shlex.quote(u) for u in reload)}"] if reload else []
    what = ", ".join([*(f"restart {u}" for u in restart), *(f"reload {u}" for u in reload)])
    return Change(component.name, "handler", " ".join([*restart, *reload]), what, tuple(commands))


ENABLED_STATES = frozenset({"enabled", "enabled-runtime", "linked", "linked-runtime", "alias"})
RUNNING_STATES = frozenset({"active", "activating", "reloading", "deactivating", "failed"})


def retire_changes(component: Component, facts: HostFacts) -> list[Change]:
    """The `retire` component's changes (deploy/retire.py): each unit still enabled or running stopped and
    disabled, each file still there removed (a daemon-reload after a unit file), each hold released."""
    out: list[Change] = []
    for unit in component.stop if facts.systemd else ():
        enabled, active = facts.services.get(unit, ("", ""))
        if enabled in ENABLED_STATES or active in RUNNING_STATES:
            out.append(Change(component.name, "service", unit, f"{enabled or 'unknown'}/{active or 'unknown'} -> "
                              "disabled/inactive (no component wants it)",
                              (f"systemctl disable --now {shlex.quote(unit)}",)))
    gone = [f for f in component.remove if facts.files.get(f) is not None]
    out += [Change(component.name, "file", f, "remove (no component wants it)", (f"rm -f {shlex.quote(f)}",))
            for f in gone]
    held = [p for p in component.unhold if (fact := facts.packages.get(p)) is not None and fact.held]
    pm = manager(component.package_manager)
    for i, pkg in enumerate(held):
        cmd = (pm.unhold(held),) if i == 0 else ()
        out.append(Change(component.name, "hold", pkg, "release the hold (it stays installed)", cmd))
    if facts.systemd and any("/systemd/" in f for f in gone):
        out.append(Change(component.name, "handler", "systemd", "daemon-reload", ("systemctl daemon-reload",)))
    return out


def component_changes(component: Component, facts: HostFacts) -> list[Change]:
    """Every change one component needs on a host, in execution order."""
    if component.name == RETIRE:
        return retire_changes(component, facts)
    files = [c for f in component.files
             if (c := file_change(component.name, f, facts, selinux=component.selinux)) is not None]
    pm = manager(component.package_manager)
    out: list[Change] = [*files]
    out += unpinned_changes(component.name, component.packages, facts, pm)
    out += package_changes(component.name, component.pins, facts, pm, component.streams)
    out += service_changes(component.name, component.services, facts)
    out += module_changes(component.name, component.modules, facts)
    if files and component.handler != "apt-update":
        handler = handler_change(component, facts, [c.target for c in files])
        if handler is not None:
            out.append(handler)
    return out


def reboot_needed(pins: list[Pin], facts_after: HostFacts) -> str | None:
    """Why the host must reboot: the loaded nvidia module differs from the installed driver."""
    driver = next((p for p in pins if p.driver), None)
    if driver is None or not facts_after.nvidia_loaded:
        return None
    installed = facts_after.package_version(driver.package)
    upstream = (installed or "").split("-", 1)[0]
    if upstream and upstream != facts_after.nvidia_loaded:
        return f"nvidia module {facts_after.nvidia_loaded} loaded, {upstream} installed"
    return None
