"""Collect from an environment's real hosts: addresses from the plan, SSH settings from `deploy`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..model.index import Index
from .plan import Target, default_targets
from .ssh import SshConfig, collect
from .store import Observations


def ssh_config(env: Path, index: Index) -> SshConfig:
    dep = index.inv.deploy
    known = (env / dep.known_hosts) if dep.known_hosts else Path.home() / ".ssh" / "known_hosts"
    return SshConfig(known_hosts=known, user=dep.ssh_user, port=dep.ssh_port, parallel=dep.parallel,
                     connect_retries=dep.connect_retries)


def targets(index: Index) -> tuple[list[Target], Target | None]:
    addrs = index.addresses
    return default_targets(index, {n: addrs.text(ip) for n, ip in addrs.mgmt.items()})


def collect_environment(env: Path, index: Index, cfg: SshConfig | None = None,
                        on_done: Callable[[str], None] | None = None) -> Observations:
    hosts, fabric = targets(index)
    return collect(cfg or ssh_config(env, index), hosts, fabric, on_done)
