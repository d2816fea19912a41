"""The lab inventory for tests in any folder: loaded once, as a model, an Index, or plain data to edit
into a variant (`pythonpath = ["tests"]` in pyproject.toml makes this importable everywhere)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from clusterforge.api import load_checked
from clusterforge.model import Inventory
from clusterforge.model.index import Index

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "inventories" / "lab"


@cache
def lab_inventory() -> Inventory:
    return load_checked(LAB).inv


def lab_index() -> Index:
    return Index(lab_inventory())


def lab_data() -> dict[str, Any]:
    """The lab inventory as plain data, to edit and validate into a variant."""
    return lab_inventory().model_dump(mode="json")


def index_of(data: dict[str, Any]) -> Index:
    return Index(Inventory.model_validate(data))
