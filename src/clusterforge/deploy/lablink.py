"""The deploy's link to the local lab: inventory -> LabSpec, lab state -> SSH targets, repo server."""

from __future__ import annotations

import dataclasses
import ipaddress
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable
from pathlib import Path

from ..lab import LabHca, LabHost, LabSpec, LabState
from ..model.index import Index
from .desired import HostPlan
from .runner import SshSettings

REPO_PORT = 8765


def lab_spec(index: Index, *, name: str, cidr: str, state_dir: Path, netfile: Path,
             nodes: Iterable[str] | None = None) -> LabSpec:
    """One lab host per inventory node (or the `nodes` subset), addresses from `cidr` (.10 upwards)."""
    net = ipaddress.IPv4Network(cidr)
    wanted = set(nodes) if nodes is not None else None
    hosts = []
    for i, node in enumerate(index.inv.nodes):
        if wanted is not None and node.name not in wanted:
            continue
        hcas = tuple(LabHca(h.name, f"{node.name} {h.name}") for h in index.hardware[node.name].hcas)
        hosts.append(LabHost(node.name, str(net.network_address + 10 + i), hcas, node.role))
    return LabSpec(name=name, network_cidr=cidr, hosts=tuple(hosts), netfile=netfile, state_dir=state_dir)


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
