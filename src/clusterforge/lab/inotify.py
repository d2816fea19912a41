"""Room for a systemd lab: each container with systemd as PID 1 holds inotify instances, and past
fs.inotify.max_user_instances systemd exits at once (status 255, no log) in the containers that start last.
``check_systemd_room`` refuses such a lab before it starts (``lab.up``)."""

from __future__ import annotations

import os
from pathlib import Path

from clusterforge.lab.errors import LabError

#: inotify instances one container with systemd as PID 1 takes (measured: bookworm's systemd 252).
SYSTEMD_INOTIFY = 7
INOTIFY_LIMIT = Path("/proc/sys/fs/inotify/max_user_instances")


def inotify_in_use() -> int:
    """inotify instances open on this machine now (every process is root's here)."""
    n = 0
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            n += sum(1 for fd in fd_dir.iterdir() if os.readlink(fd) == "anon_inode:inotify")
        except OSError:
            continue
    return n


def check_systemd_room(hosts: int, limit: int | None = None, in_use: int | None = None) -> None:
    """Refuse a systemd lab that the inotify limit cannot hold: past it, systemd exits at once (status 255,
    no log) in the containers that start last."""
    limit = int(INOTIFY_LIMIT.read_text()) if limit is None else limit
    in_use = inotify_in_use() if in_use is None else in_use
    need = hosts * SYSTEMD_INOTIFY
    if in_use + need > limit:
        raise LabError(
            f"a systemd lab of {hosts} containers needs about {need} inotify instances (systemd takes "
            f"{SYSTEMD_INOTIFY} each); fs.inotify.max_user_instances is {limit} with {in_use} in use: at most "
            f"{max(0, (limit - in_use) // SYSTEMD_INOTIFY)} such containers fit. Nothing was started. Raise the "
            "limit as root: `sysctl -w fs.inotify.max_user_instances=1024` (to keep it across reboots: `echo "
            "fs.inotify.max_user_instances=1024 > /etc/sysctl.d/60-clusterforge-lab.conf`), or bring down other "
            "systemd labs or containers holding instances, or bring the lab up without --systemd (its deploy then "
            "starts no unit)")
