"""Network namespaces plugged into a lab bridge: the one place the lab makes veths and namespaces.

Used for ibsim's namespace (ibsim's remote mode binds 0.0.0.0; inside the namespace its only
non-loopback interface is one leg of a veth pair whose other leg is enslaved to the lab bridge,
so the simulator is reachable from the lab network only) and, where podman cannot run, for
each host's (lab/hosts/hostns.py, which names the inner leg eth0).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from clusterforge.lab.errors import LabError
from clusterforge.lab.proc import run

_TIMEOUT = 30.0


def short_ifname(lab: str, suffix: str) -> str:
    """Deterministic interface name (<= 15 chars, the kernel limit)."""
    digest = hashlib.sha256(lab.encode()).hexdigest()[:8]
    name = f"cf{digest}{suffix}"
    if len(name) > 15:
        raise ValueError(name)
    return name


def netns_exists(ns: str) -> bool:
    return Path("/run/netns", ns).exists()


def link_exists(ifname: str) -> bool:
    return Path("/sys/class/net", ifname).exists()


def create_bridge(bridge: str, gateway_cidr: str) -> None:
    """A fresh Linux bridge ``bridge`` with ``gateway_cidr`` (any old one of that name goes first)."""
    delete_link(bridge)
    run(["ip", "link", "add", bridge, "type", "bridge"], timeout=_TIMEOUT)
    run(["ip", "addr", "add", gateway_cidr, "dev", bridge], timeout=_TIMEOUT)
    run(["ip", "link", "set", bridge, "up"], timeout=_TIMEOUT)


def create_netns_on_bridge(
    ns: str, bridge: str, veth_host: str, veth_ns: str, address_cidr: str
) -> None:
    """Create ``ns`` with ``address_cidr`` on ``veth_ns``, a veth whose peer ``veth_host`` is a port
    of ``bridge``. ``veth_ns`` is made inside ``ns`` (so it may be named like a host interface, eth0)."""
    if not link_exists(bridge):
        raise LabError(f"bridge {bridge} does not exist (the lab's network is not up)")
    delete_netns(ns, veth_host)
    run(["ip", "netns", "add", ns], timeout=_TIMEOUT)
    try:
        run(["ip", "link", "add", veth_host, "type", "veth", "peer", "name", veth_ns, "netns", ns],
            timeout=_TIMEOUT)
        run(["ip", "link", "set", veth_host, "master", bridge], timeout=_TIMEOUT)
        run(["ip", "link", "set", veth_host, "up"], timeout=_TIMEOUT)
        run(["ip", "-n", ns, "link", "set", "lo", "up"], timeout=_TIMEOUT)
        run(["ip", "-n", ns, "addr", "add", address_cidr, "dev", veth_ns], timeout=_TIMEOUT)
        run(["ip", "-n", ns, "link", "set", veth_ns, "up"], timeout=_TIMEOUT)
    except Exception:
        delete_netns(ns, veth_host)
        raise


def delete_netns(ns: str, veth_host: str | None) -> None:
    """Remove the veth and the namespace; missing pieces are fine (idempotent)."""
    if veth_host and link_exists(veth_host):
        run(["ip", "link", "del", veth_host], timeout=_TIMEOUT, check=False)
    if netns_exists(ns):
        run(["ip", "netns", "del", ns], timeout=_TIMEOUT)


def delete_link(ifname: str) -> None:
    if link_exists(ifname):
        run(["ip", "link", "del", ifname], timeout=_TIMEOUT, check=False)
