"""Shared fixtures for the lab tests (tests marked ``lab`` need root + scripts/lab-deps.sh)."""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

import pytest

from cf_lab_net import free_subnet

FIXTURE_NETFILE = Path(__file__).parents[1] / "fixtures" / "lab" / "fabric.net"


def fabric_tools_missing() -> str | None:
    """Why the fabric-only tests cannot run here, or None (they do not need root)."""
    for tool in ("ibsim", "opensm", "ibnetdiscover", "iblinkinfo", "ibportstate", "smpquery"):
        if shutil.which(tool) is None:
            return f"{tool} not installed (run scripts/lab-deps.sh)"
    if not glob.glob("/usr/lib/*/umad2sim/libumad2sim.so"):
        return "libumad2sim0 not installed (run scripts/lab-deps.sh)"
    return None


def container_tools_missing() -> str | None:
    why = fabric_tools_missing()
    if why:
        return why
    if os.geteuid() != 0:
        return "the container lab needs root (rootful podman, network namespaces)"
    for tool in ("podman", "runc", "debootstrap", "ssh", "ssh-keygen", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} not installed (run scripts/lab-deps.sh)"
    return None


def free_lab_subnet() -> str:
    """A /24 in 198.18.0.0/16 that no interface or podman network uses right now."""
    return free_subnet("198.18", 100 + os.getpid() % 150)


@pytest.fixture(scope="session")
def fixture_netfile() -> Path:
    return FIXTURE_NETFILE


@pytest.fixture(scope="session")
def fabric_tools() -> None:
    """Skip unless ibsim/OpenSM/infiniband-diags can run here."""
    why = fabric_tools_missing()
    if why:
        pytest.skip(why)


@pytest.fixture(scope="session")
def container_tools() -> None:
    """Skip unless podman/runc/debootstrap/ssh can run here too."""
    why = container_tools_missing()
    if why:
        pytest.skip(why)


@pytest.fixture(scope="session")
def lab_subnet(container_tools: None) -> str:
    return free_lab_subnet()


@pytest.fixture
def another_lab_subnet(container_tools: None) -> str:
    """A subnet free right now (for a second lab next to a running one)."""
    return free_lab_subnet()
