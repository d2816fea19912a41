"""Test labs: free address blocks (no interface and no podman network on this machine uses them now) and a
copy of an environment brought up on its own lab root."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def used_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 network an interface or a podman network of this machine uses now."""
    used: list[ipaddress.IPv4Network] = []
    out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True,
                         timeout=10, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if "inet" in parts:
            used.append(ipaddress.IPv4Interface(parts[parts.index("inet") + 1]).network)
    if shutil.which("podman"):
        res = subprocess.run(["podman", "network", "ls", "--format", "json"],
                             capture_output=True, text=True, timeout=30, check=False)
        if res.returncode == 0 and res.stdout.strip():
            for net in json.loads(res.stdout):
                used += [ipaddress.IPv4Network(s["subnet"], strict=False) for s in net.get("subnets") or []]
    return used


def own_network(env: Path) -> None:
    """A copy of a lab inventory (lab, lab-os) on a free management /24 clear of the lab's IPoIB subnets
    (198.18.128.0/21, 198.18.136.0/21), its drain and resume hooks pointed at the copy (a developer's lab is left
    alone)."""
    prefix = free_subnet("198.18", 40 + os.getpid() % 60).rsplit(".", 1)[0] + "."
    found = re.search(r"management: \{cidr: (198\.18\.\d+\.)0/24", (env / "services.yaml").read_text())
    assert found, f"{env}/services.yaml: no management /24 in 198.18.0.0/16 to move"
    for f in env.glob("*.yaml"):
        text = f.read_text().replace(found.group(1), prefix)
        f.write_text(re.sub(r"inventories/lab(?:-[a-z0-9-]+)?\b", str(env), text))


def free_subnet(prefix: str, start: int) -> str:
    """The first `<prefix>.N.0/24` (N from `start`, wrapping at 256) that overlaps nothing in use."""
    used = used_networks()
    for i in range(256):
        cand = ipaddress.IPv4Network(f"{prefix}.{(start + i) % 256}.0/24")
        if not any(cand.overlaps(u) for u in used):
            return str(cand)
    raise RuntimeError(f"no free /24 in {prefix}.0.0/16")


def free_block(prefix: int = 20) -> str:
    """A /`prefix` of 198.19.0.0/16 that no interface or podman network overlaps now."""
    used = used_networks()
    for cand in ipaddress.IPv4Network("198.19.0.0/16").subnets(new_prefix=prefix):
        if not any(cand.overlaps(u) for u in used):
            return str(cand)
    raise RuntimeError(f"no free /{prefix} in 198.19.0.0/16")


def cf(*args: str) -> tuple[int, str]:
    """`clusterforge ARGS` in this process: (exit code, output)."""
    from typer.testing import CliRunner

    from clusterforge.cli.main import app

    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


@contextlib.contextmanager
def lab_copy(factory: pytest.TempPathFactory, source: Path, name: str, *up_args: str,
             edit: Callable[[Path], object] | None = None) -> Iterator[Path]:
    """`source` copied as `name` into a fresh temporary directory (edited by `edit`, if given), its lab root
    beside it (CLUSTERFORGE_LAB_ROOT), `lab up ENV UP_ARGS...`; on leaving, `lab down` (asserted) and the
    variable restored. A developer's own lab of the same environment is left alone."""
    if shutil.which("podman") is None or shutil.which("ibsim") is None:
        pytest.fail("the lab needs podman and ibsim: run scripts/lab-deps.sh (CI does)")
    base = factory.mktemp(name)
    env = base / name
    shutil.copytree(source, env)
    if edit is not None:
        edit(env)
    mp = pytest.MonkeyPatch()
    mp.setenv("CLUSTERFORGE_LAB_ROOT", str(base / "state"))
    try:
        code, out = cf("lab", "up", str(env), *up_args)
        assert code == 0, out
        yield env
    finally:
        code, out = cf("lab", "down", str(env))
        mp.undo()
        assert code == 0, out
