"""A figure as people read it: the shortest text (`{:g}`): 2.0 -> `2`, 0.5 -> `0.5`, 1e-12 -> `1e-12`."""

from __future__ import annotations


def num_text(value: float) -> str:
    """`value` in its shortest form (what PromQL, the cabling files and NetBox's CSV get)."""
    return f"{value:g}"
