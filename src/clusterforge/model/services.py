"""Software pins, Lustre file systems and OpenSM settings."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .base import AbsPath, Model, MountOptions, Name

Version = Annotated[str, Field(pattern=r"^[0-9][0-9A-Za-z.+~:_-]*$")]
MgsNid = Annotated[str, Field(pattern=r"^([0-9.]+|[A-Za-z0-9][A-Za-z0-9._-]{0,62})@(o2ib|tcp)[0-9]*$")]


class SoftwarePins(Model):
    nvidia_driver: Version | None = None
    cuda: Version | None = None
    doca_ofed: Version | None = None
    nccl: Version | None = None
    nccl_tests: Version | None = None
    lustre_client: Version | None = None
    kernel: Version | None = None


class LustreFs(Model):
    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,7}$")]
    mgs_nids: list[MgsNid] = Field(
        min_length=1, description="ADDRESS@NET, or SERVER@NET (o2ib): a server of this file system, resolved to "
        "its address on the first of `interfaces`")
    mount: AbsPath
    lnet: Annotated[str, Field(pattern=r"^(o2ib|tcp)[0-9]*$")] = "o2ib0"
    interfaces: list[Name] = Field(default_factory=lambda: ["ib0"])
    servers: list[Name] = Field(default_factory=list, description="nodes serving this file system")
    failover_pairs: list[tuple[Name, Name]] = Field(
        default_factory=list,
        description="HA failover pairs among the servers ([lus01, lus02]): a pair's two servers take over "
        "each other's targets, so the planner puts them on different leaves, trunks and panels and a "
        "change plan never takes both out at once",
    )
    clients: Literal["compute", "all"] = "compute"
    options: MountOptions = "defaults,_netdev,flock"


class SmNode(Model):
    node: Name
    priority: int = Field(ge=0, le=15)


class PartitionMember(Model):
    device: Name | Literal["ALL", "ALL_CAS", "ALL_SWITCHES", "SELF"]
    membership: Literal["full", "limited"] = "full"


class Partition(Model):
    name: Name
    pkey: int = Field(ge=1, le=0x7FFF)
    ipoib: bool = False
    mtu: int | None = Field(default=None, ge=1, le=5, description="IB MTU code: 4 = 2048, 5 = 4096")
    members: list[PartitionMember] = Field(min_length=1)


class OpenSm(Model):
    sm_nodes: list[SmNode] = Field(min_length=1)
    routing_engine: Literal["ftree", "updn", "minhop", "dor", "lash", "dfsssp", "ar_ftree"] = "ftree"
    partitions: list[Partition] = Field(default_factory=list)
    node_name_map: bool = True
    sweep_interval_s: int = Field(default=10, ge=0)
    lmc: int = Field(default=0, ge=0, le=7)
