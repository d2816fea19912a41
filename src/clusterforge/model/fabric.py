"""The declared shape of the fabric, from which the planner generates switches and cables."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, ValidationInfo, field_validator

from .base import Model, ModelName, Name, Rate, Suffix
from .nodes import NodeRole

_ALL_ROLES: tuple[NodeRole, ...] = get_args(NodeRole)


class FabricSpec(Model):
    kind: Literal["fat-tree", "rail-optimized"] = Field(default="rail-optimized",
        description="topology: rail-optimized (one leaf per rail per unit) or a plain fat tree")
    tiers: Literal["auto", 2, 3] = Field(default="auto",
        description="switch tiers (auto: the fewest that fit the nodes)")
    rate: Rate = Field(default="HDR", description="link rate of the fabric")
    leaf_model: ModelName = Field(default="QM8700", description="catalog switch model of the leaves")
    spine_model: ModelName | None = Field(default=None,
        description="catalog switch model of the spines (default: the leaf model)")
    core_model: ModelName | None = Field(default=None,
        description="catalog switch model of the core (default: the spine model)")
    split: bool = Field(default=False, description="use split ports (e.g. NDR -> 2 x NDR200)")
    oversubscription: Literal["1:1", "2:1", "3:1", "4:1"] = Field(default="1:1", description="leaf down:up port ratio")
    rails: int | None = Field(default=None, ge=1, le=16, description="default: HCA ports per node")
    su_size: int | None = Field(default=None, ge=1, description="nodes per scalable unit")
    leaves_per_rail: int | None = Field(
        default=None, ge=1, le=16,
        description="leaves per rail in each scalable unit (default: the fewest whose down ports hold "
        "su_size nodes; a unit wider than a leaf takes two or more)",
    )
    planes: Literal["rail"] | int | None = Field(
        default=None,
        description="rail planes: `rail` (one plane per rail) or the rails per plane; each plane is a "
        "two-tier Clos of its own (its own subnet) and planes share no switch (default: one fabric)",
    )
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
    network_rack_suffix: Suffix = Field(
        default="-net", min_length=1,
        description="racks whose name ends with this hold the leaves of the scalable units in their row",
    )
    trunk_fiber: Literal["OM3", "OM4", "OM5", "OS2"] | None = Field(
        default=None, description="fiber of the MPO-24 trunks (default: OM4 where it reaches, else OS2)",
    )
    infra_roles: list[NodeRole] = Field(
        default_factory=list,
        description="roles whose nodes (subnet managers, storage servers, ...) go to dedicated "
        "infrastructure leaves instead of the rail leaves of a scalable unit; their ports are spread "
        "over those leaves, a node's ports on different leaves",
    )
    infra_leaves: int | None = Field(
        default=None, ge=1,
        description="infrastructure leaves (default: the fewest that hold the infrastructure nodes' "
        "ports, at least two when there are two ports or more); set it with room to grow: changing it "
        "re-spreads the infrastructure nodes' cables",
    )

    @property
    def rails_per_plane(self) -> int | None:
        """Rails in each rail plane (`planes: rail` -> 1); None without rail planes (one fabric)."""
        if self.planes is None:
            return None
        return 1 if self.planes == "rail" else int(self.planes)

    @field_validator("planes")
    @classmethod
    def _planes_positive(cls, value: Literal["rail"] | int | None) -> Literal["rail"] | int | None:
        if isinstance(value, int) and not isinstance(value, bool) and value < 1:
            raise ValueError("planes: `rail` or a number of rails per plane (at least 1)")
        return value

    @field_validator("infra_roles")
    @classmethod
    def _infra_roles_join_the_fabric(cls, value: list[NodeRole], info: ValidationInfo) -> list[NodeRole]:
        roles = info.data.get("roles")
        outside = [r for r in value if roles is not None and r not in roles]
        if outside:
            raise ValueError(f"{', '.join(outside)} not in fabric.roles: infrastructure nodes join the fabric "
                             "too; add the role(s) to `roles`")
        return value
