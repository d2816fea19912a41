"""Cables, patch panels and MPO-24 trunks."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import CableId, FiniteFloat, Model, Name, PortRef, Text

Media = Literal["DAC", "ACC", "AOC", "fiber"]
FiberType = Literal["OM3", "OM4", "OM5", "OS2"]


class Cable(Model):
    id: CableId
    a: PortRef
    b: PortRef
    media: Media
    length_m: FiniteFloat = Field(gt=0, le=2000)
    label: Text | None = Field(default=None, max_length=64)
    fiber_type: FiberType | None = Field(default=None, description="fiber media only")
    trunk: CableId | None = Field(default=None, description="MPO-24 trunk the link rides on")
    lane_group: int | None = Field(default=None, ge=0, description="fiber group within the trunk")
    generated: bool = Field(default=False, description="written by `clusterforge plan --write`")


class PatchPanel(Model):
    name: Name
    rack: Name
    u: int = Field(ge=1, le=60)
    mpo_ports: int = Field(default=24, ge=1, le=96)


class Trunk(Model):
    id: CableId
    a_panel: Name
    b_panel: Name
    fibers: Literal[24] = 24
    fiber_type: FiberType = "OM4"
    polarity: Literal["A", "B", "C"] = "B"
    length_m: FiniteFloat = Field(gt=0, le=2000)
