"""Racks, rows and rack units; power density per cooling type; leak sensors."""

from __future__ import annotations

import math

from ..model.index import Index
from ..util.errors import InventoryIssue
from ..util.errors import Path as ErrPath


def check(index: Index) -> list[InventoryIssue]:
    inv, cat = index.inv, index.cat
    out: list[InventoryIssue] = []
    rows = {r.name for r in inv.site.rows}
    for i, rack in enumerate(inv.racks):
        if rack.row not in rows:
            out.append(InventoryIssue(("racks", i, "row"), f"unknown row {rack.row!r}{_known(rows)}", rule="INV-REF"))
    # Everything that occupies rack units: (rack, first U, height, label, path)
    occupants: list[tuple[str, int, int, str, ErrPath]] = []
    load_kw: dict[str, float] = {}
    for i, node in enumerate(inv.nodes):
        if node.profile is not None and node.profile not in index.profiles:
            out.append(
                InventoryIssue(
                    ("nodes", i, "profile"), f"unknown profile {node.profile!r}{_known(index.profiles)}",
                    rule="INV-REF",
                )
            )
        hw = index.hardware[node.name]
        occupants.append((node.rack, node.u, hw.u_height, node.name, ("nodes", i)))
        load_kw[node.rack] = load_kw.get(node.rack, 0.0) + hw.power_kw
    for i, sw in enumerate(inv.switches):
        model = cat.switches.get(sw.model)
        ru = model.ru if model else 1
        occupants.append((sw.rack, sw.u, ru, sw.name, ("switches", i)))
        if model:
            load_kw[sw.rack] = load_kw.get(sw.rack, 0.0) + model.power_w / 1000
    for i, pp in enumerate(inv.patch_panels):
        occupants.append((pp.rack, pp.u, 1, pp.name, ("patch_panels", i)))
    taken: dict[tuple[str, int], str] = {}
    for rack_name, u, height, label, path in occupants:
        found = index.racks.get(rack_name)
        if found is None:
            out.append(InventoryIssue((*path, "rack"), f"unknown rack {rack_name!r}{_known(index.racks)}",
                rule="INV-REF"))
            continue
        if u + height - 1 > found.u_height:
            out.append(
                InventoryIssue(
                    (*path, "u"),
                    f"U{u}-U{u + height - 1} does not fit rack {rack_name} ({found.u_height}U)",
                    rule="INV-RACK",
                )
            )
        for unit in range(u, u + height):
            other = taken.setdefault((rack_name, unit), label)
            if other != label:
                out.append(
                    InventoryIssue((*path, "u"), f"U{unit} of rack {rack_name} is already taken by {other}",
                        rule="INV-RACK")
                )
                break
    for i, rack in enumerate(inv.racks):
        cool = cat.cooling[rack.cooling]
        limit = rack.max_density_kw or cool.max_kw
        load = load_kw.get(rack.name, 0.0)
        if load > limit + 1e-9:
            out.append(
                InventoryIssue(
                    ("racks", i),
                    f"rack {rack.name} draws {load:.1f} kW, over the {limit:g} kW "
                    f"limit for {rack.cooling} cooling",
                    rule="INV-POWER",
                )
            )
        if rack.power_budget_kw is not None:
            if rack.power_budget_kw > limit:
                out.append(
                    InventoryIssue(
                        ("racks", i, "power_budget_kw"),
                        f"{rack.power_budget_kw:g} kW exceeds the "
                        f"{limit:g} kW density limit for {rack.cooling} cooling (set max_density_kw "
                        f"to override)",
                        rule="INV-POWER",
                    )
                )
            if load > rack.power_budget_kw + 1e-9:
                out.append(
                    InventoryIssue(
                        ("racks", i, "power_budget_kw"),
                        f"rack {rack.name} draws {load:.1f} kW, over its {rack.power_budget_kw:g} kW budget",
                        rule="INV-POWER",
                    )
                )
        if cool.liquid:
            need = math.ceil(cat.leak_sensors_per_m2 * rack.floor_area_m2 - 1e-9)
            if rack.leak_sensors < need:
                out.append(
                    InventoryIssue(
                        ("racks", i, "leak_sensors"),
                        f"{rack.cooling}-cooled rack {rack.name} has {rack.leak_sensors} leak sensor(s); "
                        f"needs at least {need} ({cat.leak_sensors_per_m2:g} per m² of "
                        f"{rack.floor_area_m2:g} m²)",
                        rule="INV-COOLING",
                    )
                )
    return out


def _known(names: object) -> str:
    listed = sorted(names)  # type: ignore[call-overload]
    if not listed:
        return " (none declared)"
    shown = ", ".join(listed[:5]) + (", ..." if len(listed) > 5 else "")
    return f" (known: {shown})"
