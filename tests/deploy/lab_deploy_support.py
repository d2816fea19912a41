"""What the deploy lab tests share: the inventory, the hosts they use, the lab handle, and how to
find a free subnet. (A uniquely named module: `conftest` is ambiguous across test folders.)"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from cf_lab_net import free_subnet as free_lan
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
    return free_lan("198.19", os.getpid() % 256)


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
