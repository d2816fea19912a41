"""The high-availability groups an inventory declares: the subnet managers (`opensm.sm_nodes`) and
each Lustre failover pair (`lustre[].failover_pairs`). Members of a group must not share a single
point of failure: the planner puts them on different leaves, MPO trunks and patch panels, and
`check` reports a group whose fabric ports all sit on one leaf. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from .inventory import Inventory


@dataclass(frozen=True, slots=True)
class HaGroup:
    label: str  # "subnet managers", "lfs01 failover pair lus01 + lus02"
    members: tuple[str, ...]
    path: tuple[str | int, ...]  # model path of the declaration


def ha_groups(inv: Inventory) -> list[HaGroup]:
    """Every declared group of two or more distinct nodes, in declaration order."""
    out: list[HaGroup] = []
    if inv.opensm is not None:
        sms = tuple(dict.fromkeys(s.node for s in inv.opensm.sm_nodes))
        if len(sms) >= 2:
            out.append(HaGroup("subnet managers", sms, ("opensm", "sm_nodes")))
    for i, fs in enumerate(inv.lustre):
        for j, (a, b) in enumerate(fs.failover_pairs):
            if a != b:
                out.append(HaGroup(f"{fs.name} failover pair {a} + {b}", (a, b), ("lustre", i, "failover_pairs", j)))
    return out


def ha_partners(inv: Inventory) -> dict[str, frozenset[str]]:
    """Node -> the other members of every group it is in (nodes in no group are absent)."""
    partners: dict[str, set[str]] = {}
    for group in ha_groups(inv):
        for name in group.members:
            partners.setdefault(name, set()).update(m for m in group.members if m != name)
    return {name: frozenset(others) for name, others in partners.items()}
