"""Cross-reference checks over a structurally valid Inventory.

Each module holds one family of rules; each rule returns InventoryIssue records with the
model path of the offending item. `run_checks` runs them all and returns every issue.
"""

from __future__ import annotations

from collections.abc import Callable

from ..model.index import Index
from ..util.errors import InventoryIssue
from . import (
    addressing,
    cabling,
    compat,
    firmware,
    ha,
    hardware,
    health,
    monitoring,
    os,
    placement,
    services,
    storage,
    uniqueness,
)

Rule = Callable[[Index], list[InventoryIssue]]

RULES: tuple[Rule, ...] = (
    uniqueness.check,
    placement.check,
    hardware.check,
    cabling.check,
    addressing.check,
    services.check,
    storage.check,
    ha.check,
    compat.check,
    firmware.check,
    monitoring.check,
    health.check,
    os.check,
)


def run_checks(index: Index) -> list[InventoryIssue]:
    issues: list[InventoryIssue] = []
    for rule in RULES:
        issues.extend(rule(index))
    return issues
