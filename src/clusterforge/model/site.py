"""Where things stand: site, rows, racks and their cooling."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import FiniteFloat, Model, Name, Text

Cooling = Literal["air", "cold-plate", "immersion"]


class Row(Model):
    name: Name = Field(description="row name, referred to by racks[].row")
    index: int = Field(ge=0, description="position of the row on the floor, 0 = first")
    pitch_m: FiniteFloat = Field(default=1.2, gt=0, description="distance to the next row, metres")


class Rack(Model):
    name: Name = Field(description="rack name, referred to by nodes, switches and patch panels")
    row: Name = Field(description="the row the rack stands in (a site.rows[].name)")
    position: int = Field(ge=0, description="slot of the rack within its row, 0 = first")
    u_height: int = Field(default=42, ge=1, le=60, description="rack units of the rack")
    width_m: FiniteFloat = Field(default=0.6, gt=0, description="rack width, metres (cable lengths along the row)")
    cooling: Cooling = Field(default="air",
        description="cooling type; sets the rack's power density limit (catalog cooling.yaml)")
    power_budget_kw: FiniteFloat | None = Field(default=None, gt=0,
        description="the rack's power budget, kW; the devices' draw must stay within it")
    max_density_kw: FiniteFloat | None = Field(
        default=None, gt=0, description="overrides the cooling type's density limit"
    )
    floor_area_m2: FiniteFloat = Field(default=0.72, gt=0,
        description="floor area of the rack, m² (liquid cooling: leak sensors per m²)")
    leak_sensors: int = Field(default=0, ge=0,
        description="leak sensors fitted (liquid-cooled racks need at least 2 per m²)")


class Site(Model):
    name: Name = Field(description="site name")
    location: Text | None = Field(default=None, description="where the site is (free text)")
    routing_allowance_m: FiniteFloat = Field(
        default=2.0, ge=0, description="slack added to every computed cable length"
    )
    rack_to_tray_m: FiniteFloat = Field(
        default=1.0, ge=0, description="vertical run from a rack unit up to the cable tray"
    )
    rows: list[Row] = Field(default_factory=list, description="the floor's rows of racks")
