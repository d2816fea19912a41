"""Shared helpers for the render tests: the lab inventory (tests/cf_lab_inventory.py) and its view."""

from __future__ import annotations

from cf_lab_inventory import LAB, ROOT, index_of, lab_data, lab_index, lab_inventory
from clusterforge.render.fabric import FabricView

GOLDEN = ROOT / "tests" / "golden" / "lab"

__all__ = ["GOLDEN", "LAB", "ROOT", "index_of", "lab_data", "lab_index", "lab_inventory", "lab_view"]


def lab_view() -> FabricView:
    return FabricView(lab_index())
