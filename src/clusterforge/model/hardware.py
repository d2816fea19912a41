"""Node hardware: GPUs and NVLink, HCAs and their ports, DPUs, local storage; profiles."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import FiniteFloat, Guid, HcaName, IfName, Model, ModelName, Name, PcieAddress, Rate

NvlinkTopology = Literal["nvswitch", "bridged-pairs", "none"]


class Gpus(Model):
    model: ModelName = Field(description="catalog GPU model, e.g. H100-SXM")
    count: int = Field(ge=0, le=64, description="GPUs in the node")
    nvlink_topology: NvlinkTopology = Field(default="nvswitch",
        description="how the GPUs are joined: NVSwitch, bridged pairs or not at all")
    numa: list[int] = Field(
        default_factory=list, description="NUMA node of each GPU, by index (empty = unknown)"
    )


class HcaPort(Model):
    port: int = Field(ge=1, le=4, description="port number on the HCA, from 1")
    rate: Rate = Field(description="link rate the port runs at")
    link_layer: Literal["InfiniBand", "Ethernet"] = Field(default="InfiniBand",
        description="InfiniBand, or Ethernet (RoCE)")
    guid: Guid | None = Field(default=None, description="port GUID, when known")


class Hca(Model):
    name: HcaName = Field(description="RDMA device name, e.g. mlx5_3")
    model: ModelName = Field(description="catalog HCA model, e.g. ConnectX-7")
    ports: list[HcaPort] = Field(min_length=1, description="the HCA's ports")
    pcie: PcieAddress | None = Field(default=None, description="PCIe address, e.g. 0000:3b:00.0")
    numa: int | None = Field(default=None, ge=0, description="NUMA node the HCA is attached to")
    gpu: int | None = Field(default=None, ge=0, description="index of the GPU it is paired with")
    rail: int | None = Field(default=None, ge=0,
        description="rail the HCA's first port is cabled to (default: its position)")
    node_guid: Guid | None = Field(default=None, description="node GUID, when known")
    netdev: IfName | None = Field(default=None, description="IPoIB interface name, e.g. ib0")


class Dpu(Model):
    name: HcaName = Field(description="RDMA device name, e.g. mlx5_8")
    model: Literal["BlueField-2", "BlueField-3"] = Field(description="BlueField model")
    ports: list[HcaPort] = Field(min_length=1, description="the DPU's ports")
    pcie: PcieAddress | None = Field(default=None, description="PCIe address, e.g. 0000:3b:00.0")
    numa: int | None = Field(default=None, ge=0, description="NUMA node the DPU is attached to")
    root_complex: int | None = Field(default=None, ge=0, description="PCIe root complex (must not be a GPU's)")


class LocalDevice(Model):
    kind: Literal["nvme", "optane-pmem", "ssd", "hdd"] = Field(description="device type")
    count: int = Field(default=1, ge=1, description="devices of this kind")
    size_tb: FiniteFloat = Field(gt=0, description="size of each device, TB")
    role: Literal["os", "scratch", "cache", "lustre-ost", "lustre-mdt"] = Field(default="scratch",
        description="what the devices are used for")


class Hardware(Model):
    """A node's hardware; a profile is a named Hardware that nodes refer to."""

    u_height: int = Field(default=1, ge=1, le=10, description="rack units")
    power_kw: FiniteFloat = Field(default=0.5, ge=0, description="typical draw, kW (rack power and density checks)")
    gpus: Gpus | None = Field(default=None, description="GPUs, if any")
    hcas: list[Hca] = Field(default_factory=list, description="InfiniBand HCAs, in rail order")
    dpus: list[Dpu] = Field(default_factory=list, description="DPUs (BlueField)")
    storage: list[LocalDevice] = Field(default_factory=list, description="local storage devices")
    gpu_root_complexes: list[int] = Field(
        default_factory=list, description="PCIe root complex of each GPU, by index"
    )
    mgmt_netdev: IfName = Field(
        default="eth0", description="the management network's interface on the host (NCCL_SOCKET_IFNAME: "
        "NCCL's bootstrap and out-of-band socket traffic)")
    os: Name = Field(default="debian12",
        description="the operating system release the node runs: debian12, ubuntu2204, ubuntu2404 (DGX OS "
                    "6/7), rocky9, alma9, rhel9 (the catalog's os.yaml; docs/os.md)")


class Profile(Hardware):
    name: Name = Field(description="profile name, referred to by nodes[].profile")
