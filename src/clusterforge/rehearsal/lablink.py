"""The deploy's link to the local lab: inventory -> LabSpec, lab state -> SSH targets, repo server."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from ..deploy.component import HostPlan
from ..deploy.runner import SshSettings
from ..lab import LabState

REPO_PORT = 8765


def lab_ssh(state: LabState, channel_timeout_s: float = 20.0) -> SshSettings:
    return SshSettings(user="root", key=state.ssh_key, known_hosts=state.known_hosts, connect_timeout_s=5,
                       channel_timeout_s=channel_timeout_s)


def lab_plans(plans: dict[str, HostPlan], state: LabState) -> list[HostPlan]:
    """The plans of the hosts the lab runs, addressed at their lab containers."""
    return [dataclasses.replace(p, address=state.hosts[n].address) for n, p in plans.items() if n in state.hosts]


def repo_url(state: LabState, port: int = REPO_PORT) -> str:
    return f"http://{state.gateway}:{port}/"


def serve_repo(directory: Path, address: str, port: int = REPO_PORT,
               timeout_s: float = 10.0) -> subprocess.Popen[bytes]:
    """Serve `directory` over HTTP on the lab bridge's host address; the caller terminates it."""
    proc = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", address, "--directory",
                             str(directory), str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://{address}:{port}/dists/", timeout=1):
                return proc
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"repository server on {address}:{port} exited ({proc.returncode})") from None
            time.sleep(0.1)
    proc.terminate()
    raise RuntimeError(f"repository server on {address}:{port} did not answer within {timeout_s}s")
