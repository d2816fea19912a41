"""Calling podman (rootful) the way it works on Debian 12 hosts without systemd.

Verified constraints: the default OCI runtime (crun 1.8) fails on the
cgroup v1 hierarchy, runc works; containers must get explicit low rlimits
(``--ulimit nofile=1024:1024 --ulimit nproc=1024:1024``) or runc refuses the
inherited ones.  ``CLUSTERFORGE_LAB_RUNTIME`` overrides the runtime.
"""

from __future__ import annotations

import json
import os
import shutil

from clusterforge.lab.errors import CommandError
from clusterforge.lab.proc import Result, run

ULIMITS = ("--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024")
LABEL = "io.clusterforge.lab"


def runtime() -> str:
    return os.environ.get("CLUSTERFORGE_LAB_RUNTIME", "runc")


def podman(*args: str, timeout: float = 60.0, check: bool = True) -> Result:
    return run(["podman", "--runtime", runtime(), *args], timeout=timeout, check=check)


def podman_json(*args: str, timeout: float = 60.0) -> object:
    return json.loads(podman(*args, timeout=timeout).stdout or "null")


def podman_usable() -> tuple[bool, str]:
    """Whether rootful podman with the chosen runtime can run here, and why not."""
    if os.geteuid() != 0:
        return False, "the lab needs root (rootful podman, network namespaces)"
    if shutil.which("podman") is None:
        return False, "podman is not installed (scripts/lab-deps.sh)"
    if shutil.which(runtime()) is None:
        return False, f"OCI runtime {runtime()} is not installed"
    try:
        podman("info", "--format", "{{.Host.NetworkBackend}}", timeout=60)
    except CommandError as exc:
        return False, f"podman info failed: {exc}"
    return True, "podman"


def exists(kind: str, name: str, *, timeout: float = 30.0) -> bool:
    """``podman <kind> exists <name>`` for kind in container/image/network."""
    res = podman(kind, "exists", name, timeout=timeout, check=False)
    if res.returncode in (0, 1):
        return res.returncode == 0
    raise CommandError(res.argv, res.returncode, res.stdout, res.stderr, "podman exists failed")


def ids_with_label(kind: str, value: str) -> list[str]:
    """Names of containers/networks carrying the lab label (for leak checks)."""
    if kind == "container":
        res = podman("ps", "-a", "--filter", f"label={LABEL}={value}",
                     "--format", "{{.Names}}")
    else:
        res = podman("network", "ls", "--filter", f"label={LABEL}={value}",
                     "--format", "{{.Name}}")
    return [ln.strip() for ln in res.stdout.splitlines() if ln.strip()]
