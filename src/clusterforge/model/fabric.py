"""The declared shape of the fabric, from which the planner generates switches and cables."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, ValidationInfo, field_validator

from .base import Model, ModelName, Name, Rate, Suffix
from .nodes import NodeRole

_ALL_ROLES: tuple[NodeRole, ...] = get_args(NodeRole)


class FabricSpec(Model):
    kind: Literal["fat-tree", "rail-optimized"] = "rail-optimized"
    tiers: Literal["auto", 2, 3] = "auto"
    rate: Rate = "HDR"
    leaf_model: ModelName = "QM8700"
    spine_model: ModelName | None = None
    core_model: ModelName | None = None
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

    @field_validator("infra_roles")
    @classmethod
    def _infra_roles_join_the_fabric(cls, value: list[NodeRole], info: ValidationInfo) -> list[NodeRole]:
        roles = info.data.get("roles")
        outside = [r for r in value if roles is not None and r not in roles]
        if outside:
            raise ValueError(f"{', '.join(outside)} not in fabric.roles: infrastructure nodes join the fabric "
                             "too; add the role(s) to `roles`")
        return value
