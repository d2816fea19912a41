"""The typed inventory model (pydantic v2, frozen, unknown keys forbidden)."""

from .addressing import AddressPlan, IpoibSubnet, Subnet
from .base import Guid, Model, PortRef, normalize_guid
from .cabling import Cable, PatchPanel, Trunk
from .fabric import FabricSpec
from .hardware import Dpu, Gpus, Hardware, Hca, HcaPort, LocalDevice, Profile
from .inventory import DeploySettings, GuidLocks, HcaRef, Inventory, PriceTable, RebootPolicy
from .nodes import Node, Switch
from .services import LustreFs, OpenSm, Partition, PartitionMember, SmNode, SoftwarePins
from .site import Rack, Row, Site

__all__ = [
    "AddressPlan",
    "Cable",
    "DeploySettings",
    "Dpu",
    "FabricSpec",
    "Gpus",
    "Guid",
    "GuidLocks",
    "Hardware",
    "Hca",
    "HcaPort",
    "HcaRef",
    "Inventory",
    "IpoibSubnet",
    "LocalDevice",
    "LustreFs",
    "Model",
    "Node",
    "OpenSm",
    "Partition",
    "PartitionMember",
    "PatchPanel",
    "PortRef",
    "PriceTable",
    "Profile",
    "Rack",
    "RebootPolicy",
    "Row",
    "Site",
    "SmNode",
    "SoftwarePins",
    "Subnet",
    "Switch",
    "Trunk",
    "normalize_guid",
]
