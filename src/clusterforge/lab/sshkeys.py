"""The lab's SSH material: one client key pair per lab, one host key per host.

Host keys are generated on the lab machine BEFORE the hosts start and
written into the lab's own known_hosts, so connections are verified with
``StrictHostKeyChecking=yes`` from the very first one (no trust on first use).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

from clusterforge.lab.proc import run
from clusterforge.util.fsutil import write_atomic


def generate_key(path: Path, comment: str) -> str:
    """Create an ed25519 key pair at ``path`` (kept if present); return the public line."""
    pub = path.with_name(path.name + ".pub")
    if not (path.is_file() and pub.is_file()):
        path.parent.mkdir(parents=True, exist_ok=True)
        for p in (path, pub):
            if p.exists():
                p.unlink()
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
            timeout=30)
    os.chmod(path, 0o600)
    os.chmod(pub, 0o644)
    return pub.read_text().strip()


def known_hosts_line(names: Sequence[str], public_key: str) -> str:
    keytype, blob = public_key.split()[:2]
    return f"{','.join(names)} {keytype} {blob}"


def write_known_hosts(path: Path, lines: Iterable[str]) -> None:
    write_atomic(path, "".join(line + "\n" for line in lines))


def ssh_argv(
    key: Path,
    known_hosts: Path,
    address: str,
    command: Sequence[str],
    *,
    user: str = "root",
    connect_timeout: int = 5,
) -> list[str]:
    """ssh command line to run ``command`` on a lab host, verified against the lab known_hosts.

    The remote command is passed as one shell-quoted argument (ssh always
    hands it to the remote shell).
    """
    return [
        "ssh", "-i", str(key),
        "-o", "IdentitiesOnly=yes",
        "-o", "BatchMode=yes",
        "-o", "StrictHostKeyChecking=yes",
        "-o", f"UserKnownHostsFile={known_hosts}",
        "-o", "GlobalKnownHostsFile=/dev/null",
        "-o", f"ConnectTimeout={int(connect_timeout)}",
        "-o", "LogLevel=ERROR",
        "-F", "/dev/null",
        f"{user}@{address}",
        shlex.join(command),
    ]
