"""The words for places, ports and cables, one spelling each, for every layer that names them to a person:
validate's findings, accept's, the alerts view, the monitoring labels, day-2's change plans.

- a port: `gpu01 mlx5_0/1` (node, HCA/port) or `leaf01/17` (switch/port), `port_text`; the same text is a
  finding's `port` field in `--format json`;
- a device on the floor: `rack r01 U10`, `device_floor` (`floor_of` for a port's device);
- a cable: what its label says (`cable_label`), or in full, `cable C-0412 (label L), AOC 3 m, on MPO trunk
  ...` (`cable_text`); the trunks and patch panels a link rides (`route_text`, `routes_text`); both ends of a
  link on the floor (`link_floor`).

Pure: the Index in, text out.
"""

from __future__ import annotations

from .cabling import Cable
from .index import Index, PortKey


def port_text(key: PortKey) -> str:
    """`gpu01 mlx5_0/1` for an HCA port, `leaf01/17` for a switch port."""
    device, hca, port = key
    return f"{device} {hca}/{port}" if hca else f"{device}/{port}"


def device_floor(index: Index, device: str) -> str:
    """Rack and unit of a node or switch, for the technician."""
    place = index.places.get(device)
    return f"rack {place[0]} U{place[1]}" if place is not None else "not in the inventory"


def floor_of(index: Index, key: PortKey) -> str:
    """Rack and unit of the device that owns a port."""
    return device_floor(index, key[0])


def cable_label(cable: Cable) -> str:
    """What is printed on the cable (labels.csv): its label, else its id."""
    return cable.label or cable.id


def route_text(index: Index, cable: Cable) -> str:
    """Where a trunked link rides: 'trunk T lane group 1, patch panels P (rack R U42) / Q (rack S U42)'."""
    return routes_text(index, [cable])


def routes_text(index: Index, cables: list[Cable]) -> str:
    """The trunks some links ride, each once with its lane groups: 'trunk T lane groups 1/2/0, patch
    panels P (rack R U42) / Q (rack S U42)'; '' when none rides a trunk."""
    groups: dict[str, list[str]] = {}
    for c in cables:
        if c.trunk and c.trunk in index.trunks:
            groups.setdefault(c.trunk, [])
            if c.lane_group is not None:
                groups[c.trunk].append(str(c.lane_group))
    if not groups:
        return ""
    names = {n for t in groups for n in (index.trunks[t].a_panel, index.trunks[t].b_panel)}
    panels = {p.name: p for p in index.inv.patch_panels if p.name in names}

    def panel(name: str) -> str:
        p = panels.get(name)
        return f"{name} (rack {p.rack} U{p.u})" if p is not None else name

    parts = []
    for tid, lanes in groups.items():
        trunk = index.trunks[tid]
        lane = f" lane group{'s' if len(lanes) > 1 else ''} {'/'.join(lanes)}" if lanes else ""
        parts.append(f"trunk {tid}{lane}, patch panels {panel(trunk.a_panel)} / {panel(trunk.b_panel)}")
    return "; ".join(parts)


def link_floor(index: Index, a: PortKey, b: PortKey, cable: Cable | None = None) -> str:
    """Both ends of a link on the floor, each with its own rack and U, and the trunk it rides."""
    text = f"{port_text(a)} in {floor_of(index, a)} to {port_text(b)} in {floor_of(index, b)}"
    route = route_text(index, cable) if cable is not None else ""
    return f"{text}, via {route}" if route else text


def cable_text(index: Index, cable: Cable) -> str:
    """`cable C-0412 (label L), AOC 3 m`, and `, on MPO trunk ...` when it rides one."""
    label = f" (label {cable.label})" if cable.label else ""
    text = f"cable {cable.id}{label}, {cable.media} {cable.length_m:g} m"
    route = route_text(index, cable)
    return f"{text}, on MPO {route}" if route else text
