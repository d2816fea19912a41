"""Address plans: management, BMC and IPoIB subnets, allocated from pools."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, IPvAnyAddress, IPvAnyNetwork

from .base import DnsDomain, Model, Name

Assign = Literal["index", "guid"]


class Subnet(Model):
    cidr: IPvAnyNetwork
    gateway: IPvAnyAddress | None = None
    first: int = Field(default=10, ge=1, description="host offset of the first allocated address")
    assign: Assign = Field(default="index", description="index: node order; guid: low bits of the port GUID")
    vlan: int | None = Field(default=None, ge=1, le=4094)


class IpoibSubnet(Subnet):
    name: Name = Field(description="interface name, e.g. ib0")
    rail: int = Field(ge=0, description="HCA rail the interface sits on")
    mtu: int = Field(default=2044, ge=256, le=65520)
    mode: Literal["datagram", "connected"] = "datagram"
    pkey: int = Field(default=0x7FFF, ge=1, le=0x7FFF)


class AddressPlan(Model):
    management: Subnet | None = None
    bmc: Subnet | None = None
    ipoib: list[IpoibSubnet] = Field(default_factory=list)
    dns_domain: DnsDomain | None = None
    extra_hosts: dict[Name, IPvAnyAddress] = Field(default_factory=dict)
