"""Files the lab installs inside its hosts (read-only bind mounts).

``ibwrap.py`` is the InfiniBand tool wrapper (stdlib only, runs in the guest);
``ENTRYPOINT`` is the container's PID 1.
"""

from __future__ import annotations

from pathlib import Path

IBWRAP_SOURCE = Path(__file__).with_name("ibwrap.py")

#: Container PID 1: sshd in the foreground, reaping orphans, clean stop on TERM.
ENTRYPOINT = """#!/bin/sh
# clusterforge lab host init (PID 1). Generated; do not edit.
set -eu
mkdir -p /run/sshd /var/cache/opensm
chmod 0755 /run/sshd
/usr/sbin/sshd -D -e -f /etc/clusterforge-lab/sshd_config &
sshd_pid=$!
trap 'kill -TERM "$sshd_pid" 2>/dev/null || true; exit 0' TERM INT
while kill -0 "$sshd_pid" 2>/dev/null; do
    wait "$sshd_pid" || true
done
exit 1
"""


def sshd_config(
    listen: str,
    *,
    etc_dir: str = "/etc/clusterforge-lab",
    pid_file: str = "/run/sshd.pid",
    strict_modes: bool = True,
    set_env: dict[str, str] | None = None,
) -> str:
    """sshd_config of a lab host: key-only root login, no PAM (containers lack loginuid)."""
    for value in (listen, etc_dir, pid_file, *(set_env or {}).values()):
        if any(c.isspace() or c in "\"'" for c in value):
            raise ValueError(f"unsafe value for sshd_config: {value!r}")
    lines = [
        "# clusterforge lab sshd_config. Generated; do not edit.",
        f"ListenAddress {listen}",
        "Port 22",
        f"HostKey {etc_dir}/ssh_host_ed25519_key",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        f"AuthorizedKeysFile {etc_dir}/authorized_keys",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        f"StrictModes {'yes' if strict_modes else 'no'}",
        "PrintMotd no",
        "PrintLastLog no",
        "X11Forwarding no",
        "AcceptEnv LANG LC_*",
        f"PidFile {pid_file}",
        "Subsystem sftp /usr/lib/openssh/sftp-server",
    ]
    if set_env:
        lines.append("SetEnv " + " ".join(f"{k}={v}" for k, v in sorted(set_env.items())))
    return "\n".join(lines) + "\n"
