"""load + plan + check an environment: the `Checked` every command starts from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..inventory.load import Source, load_inventory
from ..model import Inventory
from ..model.index import Index
from ..plan import apply_plan
from ..plan.errors import PlanError
from ..util.errors import InventoryInvalid, InventoryIssue
from ..util.gcpause import gc_paused
from . import run_checks


@dataclass
class Checked:
    inv: Inventory
    index: Index
    source: Source


def load_checked(env: Path, *, planned: bool = True) -> Checked:
    """Load and cross-check an environment; raise InventoryInvalid with every issue.

    With a `fabric` spec and `planned`, the generated plan is merged in (what
    `plan --write` froze is kept; anything not yet written is added), so every later
    layer sees the whole fabric.
    """
    with gc_paused():  # ~150k small acyclic objects: gen-2 GC passes would cost more than the load
        return _load_checked(env, planned)


def _load_checked(env: Path, planned: bool) -> Checked:
    inv, source = load_inventory(env)
    if planned and inv.fabric is not None:
        try:
            inv = apply_plan(inv)
        except PlanError as exc:
            issue = InventoryIssue(("fabric", *exc.field), f"the fabric spec cannot be planned: {exc}",
                                   rule="INV-PLAN")
            raise InventoryInvalid([issue.located(*source.locate(issue.path))]) from None
    index = Index(inv)
    issues = run_checks(index)
    if issues:
        where = source.locate_many([i.path for i in issues])  # a large file: over events, not a node tree
        located = [i.located(*w) for i, w in zip(issues, where, strict=True)]
        raise InventoryInvalid(_sorted(located))
    return Checked(inv, index, source)


def _sorted(issues: list[InventoryIssue]) -> list[InventoryIssue]:
    return sorted(issues, key=lambda i: (i.file or "", i.line or 0, i.col or 0))


def summary(index: Index) -> dict[str, int]:
    inv = index.inv
    gpus = sum((hw.gpus.count if hw.gpus else 0) for hw in index.hardware.values())
    hca_ports = len(index.host_ports)
    return {
        "racks": len(inv.racks),
        "nodes": len(inv.nodes),
        "gpus": gpus,
        "hca_ports": hca_ports,
        "switches": len(inv.switches),
        "cables": len(inv.cables),
        "trunks": len(inv.trunks),
    }
