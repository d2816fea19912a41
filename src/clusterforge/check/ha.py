"""HA groups without a single point of failure in the fabric: the subnet managers
(`opensm.sm_nodes`) and each Lustre failover pair (`lustre[].failover_pairs`).

An error when every cabled fabric port of every member of a group lands on one and the
same switch: that switch failing (or being replaced) takes the whole group off the fabric.
A member with no cabled port is reported by the other checks (SM node without a fabric port).
"""

from __future__ import annotations

from ..model.ha import ha_groups
from ..model.index import Index
from ..util.errors import InventoryIssue


def check(index: Index) -> list[InventoryIssue]:
    out: list[InventoryIssue] = []
    cable_at = index.cable_at
    for group in ha_groups(index.inv):
        switches: set[str] = set()
        cabled = 0
        for name in group.members:
            hw = index.hardware.get(name)
            if hw is None:
                continue
            mine = set()
            for hca in hw.hcas:
                for p in hca.ports:
                    if p.link_layer != "InfiniBand":
                        continue
                    c = cable_at.get((name, hca.name, p.port))
                    if c is not None:
                        other = c.b if c.a.device == name else c.a
                        if other.device in index.switches:
                            mine.add(other.device)
            cabled += bool(mine)
            switches |= mine
        if cabled == len(group.members) and len(switches) == 1:
            (sw,) = switches
            role = index.switches[sw].role
            out.append(InventoryIssue(
                group.path,
                f"{' and '.join(group.members)} ({group.label}) are all cabled to {role} {sw} only: it is a single "
                f"point of failure for the group; cable them to different {role}s"
                + (" (the planner does: `clusterforge plan ENV --write`)" if index.inv.fabric is not None else ""),
                rule="INV-HA",
            ))
    return out
