"""A free /24 for a test lab: no interface and no podman network on this machine uses it now."""

from __future__ import annotations

import ipaddress
import json
import shutil
import subprocess


def free_subnet(prefix: str, start: int) -> str:
    """The first `<prefix>.N.0/24` (N from `start`, wrapping at 256) that overlaps nothing in use."""
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
    for i in range(256):
        cand = ipaddress.IPv4Network(f"{prefix}.{(start + i) % 256}.0/24")
        if not any(cand.overlaps(u) for u in used):
            return str(cand)
    raise RuntimeError(f"no free /24 in {prefix}.0.0/16")
