"""Where things stand: site, rows, racks and their cooling."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import FiniteFloat, Model, Name, Text

Cooling = Literal["air", "cold-plate", "immersion"]


class Row(Model):
    name: Name
    index: int = Field(ge=0, description="position of the row on the floor, 0 = first")
    pitch_m: FiniteFloat = Field(default=1.2, gt=0, description="distance to the next row, metres")


class Rack(Model):
    name: Name
    row: Name
    position: int = Field(ge=0, description="slot of the rack within its row, 0 = first")
    u_height: int = Field(default=42, ge=1, le=60)
    width_m: FiniteFloat = Field(default=0.6, gt=0)
    cooling: Cooling = "air"
    power_budget_kw: FiniteFloat | None = Field(default=None, gt=0)
    max_density_kw: FiniteFloat | None = Field(
        default=None, gt=0, description="overrides the cooling type's density limit"
    )
    floor_area_m2: FiniteFloat = Field(default=0.72, gt=0)
    leak_sensors: int = Field(default=0, ge=0)


class Site(Model):
    name: Name
    location: Text | None = None
    routing_allowance_m: FiniteFloat = Field(
        default=2.0, ge=0, description="slack added to every computed cable length"
    )
    rack_to_tray_m: FiniteFloat = Field(
        default=1.0, ge=0, description="vertical run from a rack unit up to the cable tray"
    )
    rows: list[Row] = Field(default_factory=list)
