"""Servers and switches: what sits in a rack and has a name on the fabric."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, IPvAnyAddress

from .base import FiniteFloat, Guid, Model, ModelName, Name
from .hardware import Dpu, Gpus, Hca, LocalDevice

NodeRole = Literal["compute", "storage", "login", "management", "subnet-manager"]
SwitchRole = Literal["leaf", "spine", "core"]


class Node(Model):
    name: Name
    rack: Name
    u: int = Field(ge=1, le=60, description="lowest rack unit the node occupies")
    role: NodeRole = "compute"
    profile: Name | None = Field(default=None, description="hardware profile to inherit")
    mgmt_ip: IPvAnyAddress | None = None
    bmc_ip: IPvAnyAddress | None = None
    # Hardware given here replaces the profile's (whole lists, not items).
    u_height: int | None = Field(default=None, ge=1, le=10)
    power_kw: FiniteFloat | None = Field(default=None, ge=0)
    gpus: Gpus | None = None
    hcas: list[Hca] | None = None
    dpus: list[Dpu] | None = None
    storage: list[LocalDevice] | None = None
    gpu_root_complexes: list[int] | None = None


class Switch(Model):
    name: Name
    model: ModelName = Field(description="catalog switch model, e.g. QM8700")
    role: SwitchRole
    rack: Name
    u: int = Field(ge=1, le=60)
    guid: Guid | None = None
    split: bool = Field(default=False, description="ports split into two (e.g. NDR -> 2 x NDR200)")
    group: int | None = Field(default=None, ge=0, description="scalable unit / pod index")
    rail: int | None = Field(default=None, ge=0)
    mgmt_ip: IPvAnyAddress | None = None
