"""Which nodes a `--limit` names: hosts, racks, roles and scalable units (`su01`, `su02`, ...).

One definition for `deploy --limit` and `lab up --limit`. A scalable unit is the `group` of the
leaf switches a node is cabled to (`su01` is group 0), so it follows the cabling, not rack names.
Pure: the checked model in, node names out (inventory order).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..model.index import Index

_SU = re.compile(r"^su0*(\d+)$")


class SelectionError(ValueError):
    """A `--limit` token that names nothing in the inventory."""


def split_tokens(items: Sequence[str]) -> tuple[str, ...]:
    """`["a,b", "c"]` -> `("a", "b", "c")` (repeatable and comma-separated options)."""
    return tuple(t.strip() for item in items for t in item.split(",") if t.strip())


def scalable_units(index: Index) -> dict[str, set[int]]:
    """node -> the scalable units (leaf groups) its HCAs are cabled to."""
    group = {s.name: s.group for s in index.inv.switches if s.group is not None and s.role == "leaf"}
    out: dict[str, set[int]] = {}
    for cable in index.inv.cables:
        for host, other in ((cable.a, cable.b), (cable.b, cable.a)):
            if host.hca is not None and other.device in group:
                out.setdefault(host.device, set()).add(group[other.device])
    return out


def _matches(index: Index, token: str, units: dict[str, set[int]]) -> list[str]:
    su = _SU.match(token)
    if su is not None:
        g = int(su.group(1)) - 1
        return [n.name for n in index.inv.nodes if g in units.get(n.name, set())]
    return [n.name for n in index.inv.nodes if token in (n.name, n.rack, n.role)]


def select_nodes(index: Index, limit: Sequence[str]) -> list[str]:
    """Nodes matching any token (node, rack, role or `suNN`), in inventory order; all when empty.
    A token that matches no node is a SelectionError naming it."""
    if not limit:
        return [n.name for n in index.inv.nodes]
    units = scalable_units(index) if any(_SU.match(t) for t in limit) else {}
    wanted: set[str] = set()
    unknown = []
    for token in limit:
        found = _matches(index, token, units)
        if not found:
            unknown.append(token)
        wanted.update(found)
    if unknown:
        raise SelectionError(f"--limit {', '.join(unknown)}: no node, rack, role or scalable unit of that name")
    return [n.name for n in index.inv.nodes if n.name in wanted]


def default_rehearsal(index: Index) -> list[str]:
    """A selection that rehearses every role: the first rack of GPU nodes, every subnet-manager node
    (an HA pair stays a pair), and one Lustre server (the MGS's when it is named in `mgs_nids`)."""
    inv = index.inv
    picked: set[str] = set()
    gpu_racks = [n.rack for n in inv.nodes
                 if (hw := index.hardware.get(n.name)) is not None and hw.gpus is not None and hw.gpus.count]
    if gpu_racks:
        picked |= {n.name for n in inv.nodes if n.rack == gpu_racks[0]}
    picked |= {n.name for n in inv.nodes if n.role == "subnet-manager"}
    if inv.opensm is not None:
        picked |= {s.node for s in inv.opensm.sm_nodes}
    servers = [s for fs in inv.lustre for s in fs.servers]
    mgs = [nid.split("@", 1)[0] for fs in inv.lustre for nid in fs.mgs_nids]
    first = next((s for s in mgs if s in servers), servers[0] if servers else None)
    if first is None:
        first = next((n.name for n in inv.nodes if n.role == "storage"), None)
    if first is not None:
        picked.add(first)
    # every other role present once (a login or service node the deploy treats differently)
    for role in dict.fromkeys(n.role for n in inv.nodes):
        if not any(index.nodes[p].role == role for p in picked):
            picked.add(next(n.name for n in inv.nodes if n.role == role))
    return [n.name for n in inv.nodes if n.name in picked]
