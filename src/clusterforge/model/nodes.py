"""Servers and switches: what sits in a rack and has a name on the fabric."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, IPvAnyAddress

from .base import FiniteFloat, Guid, IfName, Model, ModelName, Name
from .hardware import Dpu, Gpus, Hca, LocalDevice

NodeRole = Literal["compute", "storage", "login", "management", "subnet-manager"]
SwitchRole = Literal["leaf", "spine", "core"]


class Node(Model):
    name: Name = Field(description="host name, unique among nodes, switches and patch panels")
    rack: Name = Field(description="rack the node is mounted in")
    u: int = Field(ge=1, le=60, description="lowest rack unit the node occupies")
    role: NodeRole = Field(default="compute",
        description="what the node does; the fabric's roles and the deploy's components follow it")
    profile: Name | None = Field(default=None, description="hardware profile to inherit")
    mgmt_ip: IPvAnyAddress | None = Field(default=None,
        description="management address (default: allocated from addressing.management)")
    bmc_ip: IPvAnyAddress | None = Field(default=None,
        description="BMC address (default: allocated from addressing.bmc)")
    # Hardware given here replaces the profile's (whole lists, not items).
    u_height: int | None = Field(default=None, ge=1, le=10, description="rack units (replaces the profile's)")
    power_kw: FiniteFloat | None = Field(default=None, ge=0, description="typical draw, kW (replaces the profile's)")
    gpus: Gpus | None = Field(default=None, description="GPUs (replaces the profile's)")
    hcas: list[Hca] | None = Field(default=None, description="HCAs (replaces the profile's whole list)")
    dpus: list[Dpu] | None = Field(default=None, description="DPUs (replaces the profile's whole list)")
    storage: list[LocalDevice] | None = Field(default=None,
        description="local storage (replaces the profile's whole list)")
    gpu_root_complexes: list[int] | None = Field(default=None,
        description="PCIe root complex of each GPU (replaces the profile's)")
    mgmt_netdev: IfName | None = Field(default=None, description="management interface (replaces the profile's)")
    os: Name | None = Field(default=None, description="operating system release (replaces the profile's)")


class Switch(Model):
    name: Name = Field(description="switch name, unique among nodes, switches and patch panels")
    model: ModelName = Field(description="catalog switch model, e.g. QM8700")
    role: SwitchRole = Field(description="tier of the fat tree")
    rack: Name = Field(description="rack the switch is mounted in")
    u: int = Field(ge=1, le=60, description="lowest rack unit the switch occupies")
    guid: Guid | None = Field(default=None,
        description="node GUID, when known (else a placeholder until `clusterforge learn`)")
    split: bool = Field(default=False, description="ports split into two (e.g. NDR -> 2 x NDR200)")
    group: int | None = Field(default=None, ge=0, description="scalable unit / pod index")
    rail: int | None = Field(default=None, ge=0, description="rail of a rail-optimized leaf")
    mgmt_ip: IPvAnyAddress | None = Field(default=None, description="management address of the switch")
