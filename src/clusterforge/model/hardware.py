"""Node hardware: GPUs and NVLink, HCAs and their ports, DPUs, local storage; profiles."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import FiniteFloat, Guid, HcaName, IfName, Model, ModelName, Name, PcieAddress, Rate

NvlinkTopology = Literal["nvswitch", "bridged-pairs", "none"]


class Gpus(Model):
    model: ModelName = Field(description="catalog GPU model, e.g. H100-SXM")
    count: int = Field(ge=0, le=64)
    nvlink_topology: NvlinkTopology = "nvswitch"
    numa: list[int] = Field(
        default_factory=list, description="NUMA node of each GPU, by index (empty = unknown)"
    )


class HcaPort(Model):
    port: int = Field(ge=1, le=4)
    rate: Rate
    link_layer: Literal["InfiniBand", "Ethernet"] = "InfiniBand"
    guid: Guid | None = None


class Hca(Model):
    name: HcaName = Field(description="RDMA device name, e.g. mlx5_3")
    model: ModelName = Field(description="catalog HCA model, e.g. ConnectX-7")
    ports: list[HcaPort] = Field(min_length=1)
    pcie: PcieAddress | None = None
    numa: int | None = Field(default=None, ge=0)
    gpu: int | None = Field(default=None, ge=0, description="index of the GPU it is paired with")
    rail: int | None = Field(default=None, ge=0)
    node_guid: Guid | None = None
    netdev: IfName | None = Field(default=None, description="IPoIB interface name, e.g. ib0")


class Dpu(Model):
    name: HcaName
    model: Literal["BlueField-2", "BlueField-3"]
    ports: list[HcaPort] = Field(min_length=1)
    pcie: PcieAddress | None = None
    numa: int | None = Field(default=None, ge=0)
    root_complex: int | None = Field(default=None, ge=0)


class LocalDevice(Model):
    kind: Literal["nvme", "optane-pmem", "ssd", "hdd"]
    count: int = Field(default=1, ge=1)
    size_tb: FiniteFloat = Field(gt=0)
    role: Literal["os", "scratch", "cache", "lustre-ost", "lustre-mdt"] = "scratch"


class Hardware(Model):
    """A node's hardware; a profile is a named Hardware that nodes refer to."""

    u_height: int = Field(default=1, ge=1, le=10)
    power_kw: FiniteFloat = Field(default=0.5, ge=0)
    gpus: Gpus | None = None
    hcas: list[Hca] = Field(default_factory=list)
    dpus: list[Dpu] = Field(default_factory=list)
    storage: list[LocalDevice] = Field(default_factory=list)
    gpu_root_complexes: list[int] = Field(
        default_factory=list, description="PCIe root complex of each GPU, by index"
    )


class Profile(Hardware):
    name: Name
