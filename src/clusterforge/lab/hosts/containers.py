"""Podman network and one container per lab host.

Each lab gets an ``--internal`` podman network (no NAT, no route out) with
its own subnet; the host side of its bridge carries the gateway address, so
the lab machine reaches every container directly.  A container runs sshd as
its only service (PID 1 is a tiny sh init, see ``guest.ENTRYPOINT``), with:

* hostname = node name, static IP on the lab network;
* /etc/clusterforge-lab (read-only): sshd_config, host key, authorized_keys,
  ib.json (simulator address + HCA -> SIM_HOST map);
* /usr/local/sbin (read-only): ibwrap and one symlink per InfiniBand tool,
  so ``ibstat``/``ibnetdiscover``/... reach the simulator;
* env IBSIM_SERVER_NAME / IBSIM_SERVER_PORT / SIM_HOST (first HCA) for
  tools started by hand with LD_PRELOAD.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from clusterforge.lab.errors import CommandError, LabError
from clusterforge.lab.hosts.podman import LABEL, ULIMITS, exists, podman, podman_json
from clusterforge.lab.proc import Result


@dataclass(frozen=True)
class NetworkInfo:
    name: str
    bridge: str
    subnet: str
    gateway: str


def network_name(lab: str) -> str:
    return f"cf-lab-{lab}"


def container_name(lab: str, host: str) -> str:
    return f"cf-lab-{lab}-{host}"


def network_info(name: str) -> NetworkInfo | None:
    if not exists("network", name):
        return None
    data = podman_json("network", "inspect", name)
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        raise LabError(f"unexpected podman network inspect output for {name}")
    net = data[0]
    subnets = net.get("subnets") or []
    if not subnets:
        raise LabError(f"podman network {name} has no subnet")
    sub = subnets[0]
    return NetworkInfo(name, str(net.get("network_interface", "")), str(sub["subnet"]),
                       str(sub.get("gateway", "")))


def create_network(name: str, cidr: str, gateway: str, lab: str) -> NetworkInfo:
    """Create (or reuse, if identical) the lab's internal bridge network."""
    info = network_info(name)
    if info is not None:
        if info.subnet != cidr or info.gateway != gateway:
            raise LabError(
                f"podman network {name} exists with subnet {info.subnet} gateway "
                f"{info.gateway}, wanted {cidr} / {gateway}"
            )
        return info
    podman(
        "network", "create", "--internal", "--disable-dns",
        "--subnet", cidr, "--gateway", gateway,
        "--label", f"{LABEL}={lab}",
        name,
    )
    created = network_info(name)
    if created is None:
        raise LabError(f"podman network {name} vanished right after creation")
    return created


def remove_network(name: str) -> None:
    if exists("network", name):
        podman("network", "rm", "--force", name, timeout=60)


def run_host_container(
    *,
    name: str,
    hostname: str,
    image: str,
    network: str,
    address: str,
    lab: str,
    mounts: Sequence[tuple[Path, str]],
    rw_mounts: Sequence[tuple[Path, str]] = (),
    env: Sequence[tuple[str, str]],
    entrypoint: str,
    systemd: bool = False,
) -> str:
    """Start one lab host; return its container id. ``systemd``: /sbin/init as PID 1 (``--systemd=always``)
    instead of the sh init ``entrypoint``."""
    args = [
        "run", "--detach", "--name", name, "--hostname", hostname,
        "--network", network, "--ip", address,
        *ULIMITS,
        "--label", f"{LABEL}={lab}",
        "--stop-timeout", "2",
    ]
    if systemd:
        # CAP_SYS_ADMIN: mount units (the Lustre stand-in mounts a tmpfs) need it; the lab is a test machine
        args += ["--systemd=always", "--cap-add", "SYS_ADMIN", "--entrypoint", '["/sbin/init"]']
    else:
        args += ["--entrypoint", '["/bin/sh", "' + entrypoint + '"]']
    for src, dst in mounts:
        args += ["--volume", f"{src}:{dst}:ro"]
    for src, dst in rw_mounts:  # the lab's drain outbox only (drain_outbox)
        args += ["--volume", f"{src}:{dst}:rw"]
    for key, value in env:
        args += ["--env", f"{key}={value}"]
    args.append(image)
    return podman(*args, timeout=120).stdout.strip()


def container_status(name: str) -> str | None:
    """podman's state of the container ("running", "exited", ...) or None if absent."""
    if not exists("container", name):
        return None
    res = podman("container", "inspect", "--format", "{{.State.Status}}", name, check=False)
    return res.stdout.strip() if res.returncode == 0 else None


def remove_container(name: str) -> None:
    if exists("container", name):
        podman("rm", "--force", "--time", "0", name, timeout=60)


def exec_in(name: str, argv: Sequence[str], *, timeout: float = 60.0,
            check: bool = True) -> Result:
    return podman("exec", name, *argv, timeout=timeout, check=check)


def exec_detached(name: str, argv: Sequence[str]) -> None:
    podman("exec", "--detach", name, *argv, timeout=60)


def wait_running(name: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    status = None
    while time.monotonic() < deadline:
        status = container_status(name)
        if status == "running":
            return
        if status in ("exited", "stopped", None):
            break
        time.sleep(0.1)
    logs = ""
    with contextlib.suppress(CommandError):
        logs = podman("logs", "--tail", "20", name, check=False).stdout
    raise LabError(f"container {name} is {status!r}, not running\n{logs}")
