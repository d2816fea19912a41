"""Helpers for the day-2 tests: the lab inventory as data, variants of it, and their change plan."""

from __future__ import annotations

from typing import Any

from cf_lab_inventory import LAB, index_of, lab_data
from clusterforge.day2 import ChangePlan, change_plan

__all__ = ["LAB", "add_gpu09", "cable", "index_of", "lab_data", "node", "phases", "plan_for"]


def plan_for(new: dict[str, Any], old: dict[str, Any] | None = None) -> ChangePlan:
    return change_plan(index_of(old or lab_data()), index_of(new), "inventories/lab", "lab")


def node(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(n for n in data["nodes"] if n["name"] == name)


def cable(data: dict[str, Any], cid: str) -> dict[str, Any]:
    return next(c for c in data["cables"] if c["id"] == cid)


def add_gpu09(data: dict[str, Any], at_end: bool = True) -> None:
    """A ninth GPU node in the second scalable unit's rack, on port 5 of both of its rail leaves."""
    new = {"name": "gpu09", "rack": "lab-su02-r01", "u": 18, "profile": "gpu-node"}
    if at_end:
        data["nodes"].append(new)
    else:
        data["nodes"].insert(8, new)
    for rail in (0, 1):
        data["cables"].append({"id": f"C-0004{rail}", "a": f"gpu09/mlx5_{rail}/1",
                               "b": f"leaf-su02-r{rail}/5", "media": "AOC", "length_m": 10})


def phases(plan: ChangePlan, rack: str | None) -> list[str]:
    return [s.phase for s in plan.steps if s.rack == rack]
