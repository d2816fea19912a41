"""The declared shape of the fabric, from which the planner generates switches and cables."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Model, Name, Rate
from .nodes import NodeRole

_ALL_ROLES: tuple[NodeRole, ...] = ("compute", "storage", "login", "management", "subnet-manager")


class FabricSpec(Model):
    kind: Literal["fat-tree", "rail-optimized"] = "rail-optimized"
    tiers: Literal["auto", 2, 3] = "auto"
    rate: Rate = "HDR"
    leaf_model: str = "QM8700"
    spine_model: str | None = None
    core_model: str | None = None
    split: bool = Field(default=False, description="use split ports (e.g. NDR -> 2 x NDR200)")
    oversubscription: Literal["1:1", "2:1", "3:1", "4:1"] = "1:1"
    rails: int | None = Field(default=None, ge=1, le=16, description="default: HCA ports per node")
    su_size: int | None = Field(default=None, ge=1, description="nodes per scalable unit")
    switch_row: Name | None = Field(default=None, description="row that holds spine/core racks")
    roles: list[NodeRole] = Field(
        default_factory=lambda: list(_ALL_ROLES),
        description="node roles attached to the fabric",
    )
    max_sus: int | None = Field(
        default=None, ge=1,
        description="scalable units the spine and core layers are sized for; growth up to this "
        "size never moves a cable (default: the units the nodes fill now)",
    )
    spines: int | None = Field(
        default=None, ge=1,
        description="spine switches per pod (2 tiers: in all); default: the fewest that fit",
    )
    network_rack_suffix: str = Field(
        default="-net", min_length=1,
        description="racks whose name ends with this hold the leaves of the scalable units in their row",
    )
    trunk_fiber: Literal["OM3", "OM4", "OM5", "OS2"] | None = Field(
        default=None, description="fiber of the MPO-24 trunks (default: OM4 where it reaches, else OS2)",
    )
