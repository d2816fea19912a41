"""Day-2: what changed between two versions of an inventory, and the ordered plan to get there."""

from .changeplan import change_plan
from .host_diff import ComponentChange, HostChange, diff_hosts
from .inventory_diff import CableChange, DeviceChange, InventoryDiff, diff_cables, diff_inventories
from .steps import ChangePlan, Step

__all__ = [
    "CableChange", "ChangePlan", "ComponentChange", "DeviceChange", "HostChange", "InventoryDiff", "Step",
    "change_plan", "diff_cables", "diff_hosts", "diff_inventories",
]
