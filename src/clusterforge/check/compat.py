"""Software pins the deploy preflight already knows will not work together (catalog/compat.yaml)."""

from __future__ import annotations

from ..model.index import Index
from ..util.errors import InventoryIssue


def check(index: Index) -> list[InventoryIssue]:
    """The OFED / Lustre client pair, when a file system has clients: the lustre component's preflight
    would refuse it at deploy time, so `check` (and `diff`, which checks both inventories) says so first."""
    inv = index.inv
    if not inv.lustre:
        return []
    from ..catalog.compat import lustre_ofed_problem  # (deploy imports the loader, which runs these checks)

    problem = lustre_ofed_problem(inv.software.doca_ofed, inv.software.lustre_client)
    if problem is None:
        return []
    field = "lustre_client" if inv.software.lustre_client is not None else "doca_ofed"
    return [InventoryIssue(("software", field), f"{problem} (the lustre deploy preflight refuses it)",
                           rule="INV-COMPAT")]
