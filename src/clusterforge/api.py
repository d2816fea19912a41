"""clusterforge's public face: load and check an environment, its summary, the errors it raises.

Everything here lives in its capability folder (docs/architecture.md, "The house"); this module only
names what a user of the package may rely on.
"""

from __future__ import annotations

from .check.checked import Checked, load_checked, summary
from .inventory.load import Source, load_inventory
from .util.errors import InventoryInvalid, InventoryIssue

__all__ = ["Checked", "InventoryInvalid", "InventoryIssue", "Source", "load_checked", "load_inventory", "summary"]
