"""Address plans: management, BMC and IPoIB subnets, allocated from pools."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, IPvAnyAddress, IPvAnyNetwork

from .base import DnsDomain, Model, Name

Assign = Literal["index", "guid"]


class Subnet(Model):
    cidr: IPvAnyNetwork = Field(description="the subnet, e.g. 10.10.0.0/16")
    gateway: IPvAnyAddress | None = Field(default=None,
        description="default gateway, inside the subnet (never allocated to a node)")
    first: int = Field(default=10, ge=1, description="host offset of the first allocated address")
    assign: Assign = Field(default="index", description="index: node order; guid: low bits of the port GUID")
    vlan: int | None = Field(default=None, ge=1, le=4094, description="VLAN id")


class IpoibSubnet(Subnet):
    name: Name = Field(description="interface name, e.g. ib0")
    rail: int = Field(ge=0, description="HCA rail the interface sits on")
    mtu: int = Field(default=2044, ge=256, le=65520, description="IPoIB interface MTU (datagram: up to the IB MTU - 4)")
    mode: Literal["datagram", "connected"] = Field(default="datagram", description="IPoIB mode")
    pkey: int = Field(default=0x7FFF, ge=1, le=0x7FFF,
        description="P_Key of the IPoIB interface (0x7fff = default partition)")


class AddressPlan(Model):
    management: Subnet | None = Field(default=None, description="management network (mgmt_ip)")
    bmc: Subnet | None = Field(default=None, description="BMC network (bmc_ip)")
    ipoib: list[IpoibSubnet] = Field(default_factory=list, description="IPoIB interfaces, one subnet each")
    dns_domain: DnsDomain | None = Field(default=None,
        description="DNS domain appended to host names in rendered hosts files")
    extra_hosts: dict[Name, IPvAnyAddress] = Field(default_factory=dict,
        description="other hosts (name -> address) written to the hosts files and never allocated")
