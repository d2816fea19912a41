"""Cables, patch panels and MPO-24 trunks."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import CableId, FiniteFloat, Model, Name, PortRef, Text

Media = Literal["DAC", "ACC", "AOC", "fiber"]
FiberType = Literal["OM3", "OM4", "OM5", "OS2"]


class Cable(Model):
    id: CableId = Field(description="cable id, unique among cables and trunks (printed on work orders)")
    a: PortRef = Field(description="one end: `switch/PORT` or `node/HCA/PORT`")
    b: PortRef = Field(description="the other end, same form as `a`")
    media: Media = Field(
        description="DAC (passive copper), ACC (active copper), AOC (active optical) or fiber with transceivers")
    length_m: FiniteFloat = Field(gt=0, le=2000,
        description="length, metres; checked against the media's reach at the link rate")
    label: Text | None = Field(default=None, max_length=64,
        description="text printed on the cable's label (free text, up to 64 characters)")
    fiber_type: FiberType | None = Field(default=None, description="fiber media only")
    trunk: CableId | None = Field(default=None, description="MPO-24 trunk the link rides on")
    lane_group: int | None = Field(default=None, ge=0, description="fiber group within the trunk")
    generated: bool = Field(default=False, description="written by `clusterforge plan --write`")


class PatchPanel(Model):
    name: Name = Field(description="panel name, referred to by trunks[].a_panel / b_panel")
    rack: Name = Field(description="rack the panel is mounted in")
    u: int = Field(ge=1, le=60, description="rack unit of the panel (1U)")
    mpo_ports: int = Field(default=24, ge=1, le=96, description="MPO ports on the panel")


class Trunk(Model):
    id: CableId = Field(description="trunk id, unique among cables and trunks; cables[].trunk refers to it")
    a_panel: Name = Field(description="patch panel at one end")
    b_panel: Name = Field(description="patch panel at the other end")
    fibers: Literal[24] = Field(default=24, description="fibers in the trunk (MPO-24)")
    fiber_type: FiberType = Field(default="OM4", description="multimode OM3/OM4/OM5 or single-mode OS2")
    polarity: Literal["A", "B", "C"] = Field(default="B", description="TIA-568 MPO polarity method")
    length_m: FiniteFloat = Field(gt=0, le=2000, description="length, metres")
