"""Fallback hosts when podman cannot run: one network namespace + sshd per host.

Each host is a network namespace with a veth on a Linux bridge the lab owns,
plus a UTS namespace (its own hostname) and a private mount namespace in
which the lab's guest wrappers are bind-mounted over /usr/local/sbin.  The
file system is the lab machine's own: commands run over ssh act on the real
host (only network, hostname and /usr/local/sbin differ), so this mode is for
smoke tests, not for deploy dry-runs that install packages.

Needs /usr/sbin/sshd (``scripts/lab-deps.sh --netns``) and unshare(1).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from clusterforge.lab.hosts.netns import create_bridge, create_netns_on_bridge, delete_netns
from clusterforge.lab.proc import ProcessRecord, spawn_daemon

__all__ = ["SSHD", "create_bridge", "create_host_netns", "netns_usable", "remove_host_netns", "start_sshd"]

SSHD = "/usr/sbin/sshd"

# Runs inside the host's new UTS + mount namespaces, then becomes sshd.
# argv: hostname, guest sbin dir, sshd argv...
_HELPER = """\
import os, socket, subprocess, sys
hostname, sbin, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
socket.sethostname(hostname)
subprocess.run(["mount", "--make-rprivate", "/"], check=True, timeout=30)
subprocess.run(["mount", "--bind", sbin, "/usr/local/sbin"], check=True, timeout=30)
os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
os.execv(argv[0], argv)
"""


def netns_usable() -> tuple[bool, str]:
    for tool, pkg in ((SSHD, "openssh-server"), ("unshare", "util-linux"), ("ip", "iproute2")):
        if shutil.which(tool) is None:
            return False, f"{tool} missing (package {pkg}; scripts/lab-deps.sh --netns)"
    if not Path("/usr/local/sbin").is_dir():
        return False, "/usr/local/sbin does not exist"
    return True, "netns"


def create_host_netns(ns: str, bridge: str, veth_host: str, address_cidr: str) -> None:
    """Namespace ``ns`` with ``address_cidr`` on eth0, a veth whose peer is on ``bridge``."""
    create_netns_on_bridge(ns, bridge, veth_host, "eth0", address_cidr)


def start_sshd(ns: str, hostname: str, guest_sbin: Path, config: Path,
               workdir: Path) -> ProcessRecord:
    """sshd in ``ns`` with its own hostname and the guest wrappers; returns its record."""
    workdir.mkdir(parents=True, exist_ok=True)
    argv = [
        "ip", "netns", "exec", ns, "unshare", "--uts", "--mount", "--propagation", "private",
        "--", sys.executable, "-c", _HELPER, hostname, str(guest_sbin),
        SSHD, "-D", "-e", "-f", str(config),
    ]
    return spawn_daemon(argv, name="sshd", env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
                        cwd=workdir, stdin=subprocess.DEVNULL, log=workdir / "sshd.log")


def remove_host_netns(ns: str, veth_host: str) -> None:
    delete_netns(ns, veth_host)
