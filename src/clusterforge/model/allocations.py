"""Frozen address allocations: the `allocations` section of `addresses.generated.yaml`.

Written by `clusterforge plan ENV --write` (and by the first real deploy when the file is
absent); read back so that a node keeps its addresses whatever happens to the node list.

    allocations:
      nodes:
        gpu01: {mgmt: 10.10.0.10, bmc: 10.11.0.10, ipoib: {ib0: 10.100.0.10, ib1: 10.100.128.10}}
      released:
        mgmt: {10.10.0.86: gpu77}        # address: the node that last had it

`nodes` holds the addresses of the inventory's nodes as last written; the entry of a node no
longer declared is ignored (its addresses are held back for the change) and moves to
`released` at the next write. A released address goes to another node only once its pool has
no never-used address left; a node that comes back under the same name gets its own back.
"""

from __future__ import annotations

import socket
from typing import Annotated

from pydantic import AfterValidator, Field

from .base import Model, Name


def address_value(text: str) -> int:
    """An address's integer value (raises OSError when `text` is not an IPv4 or IPv6 address)."""
    family = socket.AF_INET6 if ":" in text else socket.AF_INET
    return int.from_bytes(socket.inet_pton(family, text), "big")


def _address(text: str) -> str:
    try:
        address_value(text)
    except OSError:
        raise ValueError(f"{text!r} is not an IPv4 or IPv6 address") from None
    return text


# Checked with inet_pton and kept as text: pydantic's IPvAnyAddress costs 2 us an address (45 ms for
# the 20,000 of a 2,048-node inventory), this 0.2 us.
Address = Annotated[str, AfterValidator(_address), Field(description="an IPv4 or IPv6 address",
                                                        json_schema_extra={"format": "ipvanyaddress"})]


class NodeAllocation(Model):
    """One node's pool addresses (an explicit `mgmt_ip`/`bmc_ip` is recorded too, as in effect)."""

    mgmt: Address | None = Field(default=None, description="frozen management address")
    bmc: Address | None = Field(default=None, description="frozen BMC address")
    ipoib: dict[Name, Address] = Field(default_factory=dict, description="interface -> address")


class Released(Model):
    """Addresses given back, each with the node that last had it."""

    mgmt: dict[Address, Name] = Field(default_factory=dict,
        description="released management addresses -> the node that had each")
    bmc: dict[Address, Name] = Field(default_factory=dict,
        description="released BMC addresses -> the node that had each")
    ipoib: dict[Name, dict[Address, Name]] = Field(default_factory=dict, description="interface -> ...")


class Allocations(Model):
    nodes: dict[Name, NodeAllocation] = Field(
        default_factory=dict, description="frozen addresses of each node (written, not edited)"
    )
    released: Released = Field(
        default_factory=Released,
        description="addresses of nodes gone from the inventory: given to another node only when the pool "
        "has no never-used address left",
    )
