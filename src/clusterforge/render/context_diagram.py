"""Fabric diagram as Graphviz dot (and SVG through `dot`, see svg.py).

Small fabrics (up to DETAIL_LIMIT switches + nodes) are drawn device by device: one
rank per switch tier, nodes at the bottom, parallel switch links merged into one edge
labelled `2 x HDR`, node links coloured by rail. Larger ones are summarized: one box
per switch tier and scalable-unit group, one box per node role and group, edges
labelled with their link counts.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from .fabric import ROLE_TIER, FabricView
from .spec import FileSpec

DETAIL_LIMIT = 64
RAIL_COLORS = (
    ("#1f77b4", "blue"), ("#ff7f0e", "orange"), ("#2ca02c", "green"), ("#d62728", "red"),
    ("#9467bd", "purple"), ("#8c564b", "brown"), ("#e377c2", "pink"), ("#17becf", "cyan"),
)
FILL = {"core": "#f4cccc", "spine": "#fce5cd", "leaf": "#d9ead3", "node": "#cfe2f3"}


def dot_id(text: str) -> str:
    """A quoted dot identifier or string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dot_label(*lines: str) -> str:
    """A quoted multi-line dot label (lines joined by dot's `\\n`)."""
    return '"' + "\\n".join(line.replace("\\", "\\\\").replace('"', '\\"') for line in lines) + '"'


def _rates(counter: Counter[str]) -> str:
    return ", ".join(f"{n} x {rate}" if n > 1 else rate for rate, n in sorted(counter.items()))


def detailed(fab: FabricView) -> dict[str, Any]:
    inv = fab.index.inv
    ranks: list[list[dict[str, str]]] = []
    for role in ("core", "spine", "leaf"):
        row = [{"id": dot_id(s.name), "label": dot_label(s.name, s.model), "fill": FILL[role],
                "shape": "box"} for s in fab.switches_of(role)]
        if row:
            ranks.append(row)
    nodes = [{"id": dot_id(n.name), "label": dot_label(n.name, n.role), "fill": FILL["node"],
              "shape": "ellipse"} for n in inv.nodes]
    if nodes:
        ranks.append(nodes)
    pairs: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    edges: list[dict[str, str]] = []
    rails: set[int] = set()
    roles = fab.switch_roles
    for link in fab.links:
        (da, ha, pa), (db, hb, pb) = link.a, link.b
        if ha is None and hb is None:
            lo, hi = sorted((da, db), key=lambda d: (ROLE_TIER.get(roles.get(d, ""), 0), d))
            pairs[(hi, lo)][link.rate or "?"] += 1
            continue
        node, ca_name, port, sw = (da, ha, pa, db) if ha is not None else (db, hb, pb, da)
        ca = fab.ca_of(node, ca_name or "")
        rail = ca.rail if ca is not None and ca.rail is not None else 0
        rails.add(rail)
        edges.append({"a": dot_id(sw), "b": dot_id(node), "label": "",
                      "color": RAIL_COLORS[rail % len(RAIL_COLORS)][0],
                      "tooltip": dot_id(f"{link.cable.id}: {node} {ca_name}/{port} - {sw} {link.rate or '?'}")})
    trunks = [{"a": dot_id(hi), "b": dot_id(lo), "label": dot_id(_rates(counter)), "color": "#555555",
               "tooltip": dot_id(f"{hi} - {lo}")} for (hi, lo), counter in pairs.items()]
    legend = "node links by rail: " + ", ".join(
        f"rail {r} {RAIL_COLORS[r % len(RAIL_COLORS)][1]}" for r in sorted(rails))
    return {"ranks": ranks, "edges": trunks + edges, "legend": legend if rails else ""}


_PLURAL = {"leaf": "leaves", "spine": "spines", "core": "cores"}


def _switch_box(role: str, group: int | None) -> str:
    return _PLURAL[role] if group is None else f"{_PLURAL[role]}, group {group}"


def summarized(fab: FabricView) -> dict[str, Any]:
    inv = fab.index.inv
    box_of: dict[str, str] = {}
    members: dict[str, list[str]] = defaultdict(list)
    tier_of: dict[str, str] = {}
    for s in inv.switches:
        box = _switch_box(s.role, s.group)
        box_of[s.name] = box
        members[box].append(s.name)
        tier_of[box] = s.role
    node_group: dict[str, int] = {}
    for s in inv.switches:
        if s.group is not None:
            for node in fab.leaf_nodes[s.name]:
                node_group.setdefault(node, s.group)
    for n in inv.nodes:
        group = node_group.get(n.name)
        box = f"{n.role} nodes" + ("" if group is None else f", group {group}")
        box_of[n.name] = box
        members[box].append(n.name)
        tier_of[box] = "node"
    ranks: list[list[dict[str, str]]] = []
    for tier in ("core", "spine", "leaf", "node"):
        row = [{"id": dot_id(box), "label": dot_label(box, f"{len(names)} {'switches' if tier != 'node' else 'nodes'}"),
                "fill": FILL[tier], "shape": "box" if tier != "node" else "ellipse"}
               for box, names in members.items() if tier_of[box] == tier]
        if row:
            ranks.append(row)
    counts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    order = {"core": 0, "spine": 1, "leaf": 2, "node": 3}
    for link in fab.links:
        ba, bb = box_of[link.a[0]], box_of[link.b[0]]
        hi, lo = sorted((ba, bb), key=lambda b: (order[tier_of[b]], b))
        counts[(hi, lo)][link.rate or "?"] += 1
    edges = [{"a": dot_id(hi), "b": dot_id(lo), "label": dot_id(_rates(c)), "color": "#555555",
              "tooltip": dot_id(f"{hi} - {lo}")} for (hi, lo), c in counts.items()]
    return {"ranks": ranks, "edges": edges, "legend": "edges: link count x rate between the groups"}


def diagram(fab: FabricView) -> dict[str, Any]:
    inv = fab.index.inv
    devices = len(inv.switches) + len(inv.nodes)
    summary = devices > DETAIL_LIMIT
    body = summarized(fab) if summary else detailed(fab)
    title = (f"{inv.site.name} fabric: {len(inv.switches)} switches, {len(inv.nodes)} nodes, "
             f"{len(inv.cables)} cables" + (" (summary)" if summary else ""))
    legend = body.pop("legend")
    return {"title": dot_label(title, legend) if legend else dot_id(title), "summary": summary, **body}


def diagram_files(fab: FabricView) -> list[FileSpec]:
    return [FileSpec("fabric/fabric.dot", "diagram/fabric.dot.j2", diagram(fab))]
