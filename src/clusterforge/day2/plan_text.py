"""The words of a change plan's steps: ports, slots, places, reasons, host ranges, values, commissioning
checks. Pure."""

from __future__ import annotations

from ..model.index import Index
from .inventory_diff import CableChange, DeviceChange


def commissioning_checks(before: str, after: str, sensors: int) -> list[str]:
    if after == "air":
        return [f"cooling {before} -> air: the liquid loop is drained and capped, airflow verified"]
    checks = [f"leak test of the {after} loop at operating pressure (cooling {before} -> {after})"]
    checks.append(f"verify the rack's {sensors} leak sensor(s) report and alarm" if sensors
                  else "verify the leak sensors report and alarm (the rack declares none: leak_sensors 0)")
    checks.append("verify coolant flow and inlet/outlet temperatures under load before the rack returns")
    return checks


def relabel_text(c: CableChange) -> str:
    assert c.old is not None and c.new is not None
    parts = []
    if c.old.id != c.new.id:
        parts.append(f"id {c.old.id} -> {c.new.id}")
    if c.old.label != c.new.label:
        parts.append(f"label {c.old.label or '-'} -> {c.new.label or '-'}")
    return "relabel: " + ", ".join(parts)


def slot_text(place: tuple[str, int] | None) -> str:
    return "?" if place is None else f"{place[0]} U{place[1]}"


def place_text(place: tuple[str, int] | None) -> str:
    return "?" if place is None else f"{place[0]} position {place[1]}"


def model_of(index: Index, d: DeviceChange) -> str:
    if d.kind == "switch" and d.name in index.switches:
        return index.switches[d.name].model
    if d.kind == "node" and d.name in index.nodes:
        return index.nodes[d.name].profile or ""
    return ""


def reasons_text(reasons: list[str], most: int = 3) -> str:
    """A group's reasons, each once, in the order found; past `most`, how many more."""
    unique = list(dict.fromkeys(reasons))
    more = f"; and {len(unique) - most} more" if len(unique) > most else ""
    return "; ".join(unique[:most]) + more


def hosts_text(hosts: list[str]) -> str:
    return hosts[0] if len(hosts) == 1 else f"{hosts[0]} .. {hosts[-1]} ({len(hosts)} hosts)"


def value_text(v: object) -> str:
    """A field's value as a step says it: a number as a cable's length is printed (7, not 7.0)."""
    return f"{v:g}" if isinstance(v, float) else str(v)
