"""What the deploy lab tests share: the inventory, the hosts they use, the lab handle, and how to
find a free subnet. (A uniquely named module: `conftest` is ambiguous across test folders.)"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from clusterforge.lab import LabSpec, LabState, down, up

ROOT = Path(__file__).resolve().parents[2]
ENV = ROOT / "inventories" / "lab"
NODES = ("gpu01", "gpu02", "sm01", "lus01")


def missing_tools() -> str | None:
    if os.geteuid() != 0:
        return "lab deploy tests need root"
    for tool in ("podman", "runc", "debootstrap", "ssh", "ibsim", "opensm", "dpkg-deb", "apt-ftparchive"):
        if shutil.which(tool) is None:
            return f"{tool} not installed (scripts/lab-deps.sh; apt-get install dpkg-dev apt-utils)"
    return None


def free_subnet() -> str:
    used: list[ipaddress.IPv4Network] = []
    out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, timeout=10,
                         check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if "inet" in parts:
            used.append(ipaddress.IPv4Interface(parts[parts.index("inet") + 1]).network)
    res = subprocess.run(["podman", "network", "ls", "--format", "json"], capture_output=True, text=True,
                         timeout=30, check=False)
    if res.returncode == 0 and res.stdout.strip():
        for net in json.loads(res.stdout):
            used += [ipaddress.IPv4Network(s["subnet"], strict=False) for s in net.get("subnets") or []]
    for i in range(256):
        cand = ipaddress.IPv4Network(f"198.19.{(os.getpid() + i) % 256}.0/24")
        if not any(cand.overlaps(u) for u in used):
            return str(cand)
    raise RuntimeError("no free /24 in 198.19.0.0/16")


@dataclass
class DeployLab:
    spec: LabSpec
    state: LabState

    @property
    def state_dir(self) -> Path:
        return self.spec.state_dir

    def container(self, host: str) -> str:
        return self.state.hosts[host].container

    def reset(self) -> None:
        """Fresh containers (the deploy starts from a clean image again)."""
        down(self.spec.state_dir)
        self.state = up(self.spec, mode="podman")
