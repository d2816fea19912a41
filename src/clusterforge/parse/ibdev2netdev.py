"""``ibdev2netdev`` (MLNX_OFED / rdma-core script): RDMA device port -> netdev.

Plain ``mlx5_0 port 1 ==> ib0 (Up)`` and verbose (``-v``) ``0000:3b:00.0 mlx5_0
(MT4123 - MCX653105A-HDAT) ConnectX-6 ... fw 20.28.1002 port 1 (ACTIVE) ==> ib0 (Up)``
(one line).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from clusterforge.parse._common import empty_error, fail, numbered, shorten, split_lines

TOOL = "ibdev2netdev"

__all__ = ["Ibdev2netdevEntry", "parse", "to_json"]


@dataclass(frozen=True, slots=True)
class Ibdev2netdevEntry:
    device: str
    port: int
    netdev: str | None
    """None when the script prints no interface name."""
    state: str
    """Link state of the netdev as printed (``Up``/``Down``)."""
    pci_address: str | None
    """``-v`` only."""
    description: str | None
    """``-v`` only: the text between the device name and ``port N``."""
    port_state: str | None
    """``-v`` only: IB port state (``ACTIVE``, ``DOWN``...)."""


_PLAIN_RE = re.compile(r"(\S+) port (\d+) ==> (?:(\S+) )?\((\w+)\)")
_VERBOSE_RE = re.compile(
    r"([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]) (\S+) (.*?) ?"
    r"port (\d+) \((\w+)\) ==> (?:(\S+) )?\((\w+)\)"
)


def parse(text: str) -> tuple[Ibdev2netdevEntry, ...]:
    out: list[Ibdev2netdevEntry] = []
    for idx, raw, s in numbered(split_lines(text)):
        vm = _VERBOSE_RE.fullmatch(s)
        if vm is not None:
            pci, dev, desc, port, pstate, netdev, state = vm.groups()
            out.append(Ibdev2netdevEntry(device=dev, port=int(port), netdev=netdev, state=state,
                                         pci_address=pci, description=desc or None,
                                         port_state=pstate))
            continue
        pm = _PLAIN_RE.fullmatch(s)
        if pm is None:
            raise fail(TOOL, idx, raw, f"expected '<dev> port N ==> <netdev> (<state>)', "
                       f"got {shorten(raw)}")
        dev, port, netdev, state = pm.groups()
        out.append(Ibdev2netdevEntry(device=dev, port=int(port), netdev=netdev, state=state,
                                     pci_address=None, description=None, port_state=None))
    if not out:
        raise empty_error(TOOL)
    return tuple(out)


def to_json(records: tuple[Ibdev2netdevEntry, ...]) -> list[dict[str, Any]]:
    return [
        {
            "device": e.device, "port": e.port, "netdev": e.netdev, "state": e.state,
            "pci_address": e.pci_address, "description": e.description,
            "port_state": e.port_state,
        }
        for e in records
    ]
