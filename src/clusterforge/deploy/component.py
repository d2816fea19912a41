"""The shape of a host's desired state: its components (files, packages, services, ...) and the plan that
holds them. Data only: `desired.py` builds them from the model, `monitoring.py` adds the monitoring
component, the engines (runner, ops, Ansible) read them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model.inventory import RebootPolicy
from .os_target import OsTarget
from .packages import Pin


@dataclass(frozen=True)
class ManagedFile:
    dest: str
    """Absolute path on the host (under `DeployOptions.root`)."""
    template: str
    context: Mapping[str, Any]
    """The full template context, banner and environment included (what Ansible gets too)."""
    content: str
    mode: int = 0o644
    secret: bool = False
    """Never printed or diffed (repository credentials)."""
    block: bool = False
    """Managed as a marked block inside an existing file (/etc/hosts), not the whole file."""
    unit: str = ""
    """The systemd unit this file configures: restarted when the file changes (the `units` handler)."""
    reload: bool = False
    """Reload `unit` (it re-reads this file on SIGHUP) instead of restarting it."""


RETIRE = "retire"
"""The component that takes away what a host was deployed and no longer wants (deploy/retire.py)."""


@dataclass(frozen=True)
class Component:
    name: str
    files: tuple[ManagedFile, ...] = ()
    pins: tuple[Pin, ...] = ()
    packages: tuple[str, ...] = ()
    """Unpinned packages that must be present (distribution packages such as opensm)."""
    services: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    """Kernel modules loaded when their dependencies are (persisted by a modules-load file)."""
    handler: str | None = None
    """What a changed file triggers: `opensm-resweep`, `systemd-reload`, `netplan-apply`, `apt-update`, `units`
    (each changed file's own `unit` restarted or reloaded, after a daemon-reload when a unit file changed)."""
    problems: tuple[str, ...] = ()
    """Preflight problems known from the model alone: the component fails before any change."""
    start_after: str = ""
    """OpenSM on a standby SM node: the SM node of the highest priority, whose OpenSM both engines start first
    and wait for (until an SM answers as MASTER) before they start this one (docs/deploy.md)."""
    wait_master: bool = False
    """OpenSM on the highest-priority SM node when there are others: once started, wait until an SM answers as
    MASTER (at most MASTER_WAIT_S) before the standbys' OpenSM starts."""
    stop: tuple[str, ...] = ()
    """`retire` only: units to stop and disable (what the host was deployed and no longer wants)."""
    remove: tuple[str, ...] = ()
    """`retire` only: files to remove."""
    unhold: tuple[str, ...] = ()
    """`retire` only: packages to release from their hold (they stay installed: removing one is a person's call)."""
    retires: tuple[str, ...] = ()
    """`retire` only: the components the host no longer has at all (dropped from the record once done)."""
    package_manager: str = "apt"
    """What installs, holds and releases this component's packages on its host (apt | dnf: the host's family,
    catalog/os.yaml): pkgmgr.py."""
    streams: tuple[str, ...] = ()
    """dnf module streams enabled before the packages are installed (EL9's `nvidia-driver:550-open`)."""
    selinux: bool = False
    """The host runs SELinux (its family's, catalog/os.yaml): every file written gets its policy's context
    (`restorecon -F`) once in place."""
    ports: tuple[tuple[str, str], ...] = ()
    """What it listens on for other hosts: (`9100/tcp`, who), opened by firewalld on a family with a firewall
    (deploy/firewall.py)."""


@dataclass(frozen=True)
class HostPlan:
    name: str
    address: str
    rack: str
    role: str
    components: tuple[Component, ...]
    reboot: RebootPolicy = field(default_factory=RebootPolicy)
    os: OsTarget | None = None
    """The release the inventory declares (None: not checked, as in a plan built by hand): a host whose
    /etc/os-release says otherwise is refused before any change (os_target.py)."""

    def component(self, name: str) -> Component | None:
        return next((c for c in self.components if c.name == name), None)

    @property
    def package_manager(self) -> str:
        """apt | dnf: the declared OS family's (apt where none is declared)."""
        return self.os.package_manager if self.os is not None else "apt"

    @property
    def family(self) -> str:
        return self.os.family if self.os is not None else "debian"

    @property
    def pins(self) -> list[Pin]:
        return [p for c in self.components for p in c.pins]

    @property
    def files(self) -> list[ManagedFile]:
        return [f for c in self.components for f in c.files]
