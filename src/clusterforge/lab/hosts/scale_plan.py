"""The scale lab's pure parts (docs/scale.md): its address plan, the `ip -batch` lines that bring it up, and the
memory arithmetic that refuses a size the machine cannot hold. No I/O; lab/hosts/scale.py does the starting and
stopping.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from clusterforge.lab.errors import LabError

SUBNET = "198.19.224.0/20"
SEGMENT_PREFIX = 22
SEGMENT_TARGETS = 1000
FIRST_HOST = 10
NS_PREFIX = "cfsc"
BRIDGE_PREFIX = "cfscbr"
VETH_PREFIX = "cfscv"
WORK = Path("/var/tmp/cf-scale")
USER = "cfbench"
FREE_FLOOR_MB = 6 * 1024
PROBE_TARGETS = 32
MIN_TARGET_MB = 1.0
TIMEOUT_S = 120



class ScaleError(LabError):
    """The scale lab could not do what was asked."""


class ScaleRefused(ScaleError):
    """The size asked for does not fit this machine's memory; nothing was started."""


# -- the address plan (pure) --------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    bridge: str
    network: ipaddress.IPv4Network
    gateway: str


@dataclass(frozen=True)
class ScaleAddresses:
    """The scale lab's addresses: its segments and each target's address (not the inventory's AddressPlan)."""

    segments: tuple[Segment, ...]
    addresses: tuple[str, ...]
    """Target i's address; target i is on segment i // SEGMENT_TARGETS."""

    def segment_of(self, i: int) -> Segment:
        return self.segments[i // SEGMENT_TARGETS]


def capacity(subnet: str = SUBNET) -> int:
    net = ipaddress.IPv4Network(subnet)
    if net.prefixlen > SEGMENT_PREFIX:
        raise ScaleError(f"scale lab: {subnet} is narrower than a /{SEGMENT_PREFIX} segment")
    return len(list(net.subnets(new_prefix=SEGMENT_PREFIX))) * SEGMENT_TARGETS


def address_plan(n: int, subnet: str = SUBNET) -> ScaleAddresses:
    """N targets on `subnet`'s /22 segments, 1,000 a segment, from .10 of each (its gateway .1)."""
    net = ipaddress.IPv4Network(subnet)
    if not net.subnet_of(ipaddress.IPv4Network("198.18.0.0/15")):
        raise ScaleError(f"scale lab: {subnet} is outside the benchmark range 198.18.0.0/15")
    if not 1 <= n <= capacity(subnet):
        raise ScaleError(f"scale lab: {n} targets: {subnet} holds 1 to {capacity(subnet):,}")
    count = -(-n // SEGMENT_TARGETS)
    segs = tuple(Segment(f"{BRIDGE_PREFIX}{k}", s, str(s.network_address + 1))
                 for k, s in zip(range(count), net.subnets(new_prefix=SEGMENT_PREFIX), strict=False))
    addrs = tuple(str(segs[i // SEGMENT_TARGETS].network.network_address + FIRST_HOST + i % SEGMENT_TARGETS)
                  for i in range(n))
    return ScaleAddresses(segs, addrs)


def target_mac(i: int) -> str:
    """Target i's MAC: locally administered, 02:cf:5c and i in the last three bytes."""
    return "02:cf:5c:" + ":".join(f"{(i >> s) & 0xFF:02x}" for s in (16, 8, 0))


def bridge_mac(k: int) -> str:
    """Segment k's bridge MAC, set at creation: a bridge without one takes its lowest port's MAC and changes it
    as ports join, and each change flushes the neighbour entries on it, permanent ones too."""
    return f"02:cf:5d:00:00:{k:02x}"


def bring_up_lines(plan: ScaleAddresses, n: int) -> list[str]:
    """`ip -batch` lines that make the segments' bridges, N namespaces with their veths and the controller's
    permanent neighbour entries (pure). Each target has a fixed MAC and a permanent entry: the controller's
    table holds 1,024 learned entries by default (gc_thresh3) and permanent ones do not count. The bridges
    get a fixed MAC and the entries come last, after every port has joined: with a bridge's MAC following
    its ports, 179 to 258 of 1,024 entries were flushed as later veths joined, those targets then needed
    learned entries past gc_thresh3, and a deploy found them unreachable."""
    segs = plan.segments[: -(-n // SEGMENT_TARGETS)]
    lines: list[str] = []
    for k, s in enumerate(segs):
        lines += [f"link add {s.bridge} address {bridge_mac(k)} type bridge",
                  f"addr add {s.gateway}/{s.network.prefixlen} dev {s.bridge}", f"link set {s.bridge} up"]
    for i in range(n):
        ns = f"{NS_PREFIX}{i}"
        lines += [f"netns add {ns}",
                  f"link add {VETH_PREFIX}{i} type veth peer name eth0 address {target_mac(i)} netns {ns}",
                  f"link set {VETH_PREFIX}{i} master {plan.segment_of(i).bridge} up"]
    lines += [f"neigh replace {plan.addresses[i]} lladdr {target_mac(i)} dev {plan.segment_of(i).bridge} "
              "nud permanent" for i in range(n)]
    return lines


def missing_neighbours(addresses: Sequence[str], neigh_json: str) -> list[str]:
    """The addresses without a permanent entry in `ip -j neigh show nud permanent`'s output (pure)."""
    have = {e.get("dst") for e in json.loads(neigh_json or "[]") if "PERMANENT" in (e.get("state") or [])}
    return [a for a in addresses if a not in have]


def target_name(i: int) -> str:
    return f"t{i:04d}"


# -- the memory arithmetic (pure) ---------------------------------------------------------------------


def need_mb(n: int, target_mb: float, controller_mb_per_host: float = 0.0, controller_mb: float = 0.0) -> float:
    """What N targets and the controller working on them take, in MiB."""
    return n * (target_mb + controller_mb_per_host) + controller_mb


def largest_fitting(available_mb: float, target_mb: float, controller_mb_per_host: float = 0.0,
                    controller_mb: float = 0.0, floor_mb: float = FREE_FLOOR_MB) -> int:
    per = target_mb + controller_mb_per_host
    room = available_mb - floor_mb - controller_mb
    return max(0, int(room // per)) if per > 0 else 0


def check_room(n: int, available_mb: float, target_mb: float, controller_mb_per_host: float = 0.0,
               controller_mb: float = 0.0, floor_mb: float = FREE_FLOOR_MB) -> None:
    """ScaleRefused unless N targets (and the controller) leave at least `floor_mb` of MemAvailable."""
    need = need_mb(n, target_mb, controller_mb_per_host, controller_mb)
    left = available_mb - need
    if left >= floor_mb:
        return
    fits = largest_fitting(available_mb, target_mb, controller_mb_per_host, controller_mb, floor_mb)
    ctl = ""
    if controller_mb_per_host or controller_mb:
        ctl = f" and the controller {n * controller_mb_per_host + controller_mb:,.0f} MiB"
    raise ScaleRefused(
        f"scale lab: {n:,} targets would leave {left:,.0f} MiB free, under the floor of {floor_mb:,.0f} MiB: "
        f"they need about {need:,.0f} MiB (the targets {n:,} x {target_mb:.1f} MiB{ctl}) and MemAvailable is "
        f"{available_mb:,.0f} MiB; the largest size that fits is {fits:,} targets. Nothing was started.")


def overlapping(subnet: str, used: list[str]) -> list[str]:
    """The networks of `used` (CIDR text, as `ip -o -4 addr` prints them) that overlap `subnet`."""
    net = ipaddress.IPv4Network(subnet)
    return [u for u in used if ipaddress.IPv4Network(u, strict=False).overlaps(net)]
