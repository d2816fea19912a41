"""The node health check against the scheduler hooks it drains and resumes through (docs/health.md).

cf-nodecheck drains and resumes only through `deploy.reboot.drain` / `.resume` (the one path to the
scheduler, model/hooks.py). A check with no drain hook would find a broken node and tell no one (the pain
the health checks exist for); one whose drain hook drops `{reason}` could not tell its own drains from a
person's, so it would never re-admit a node it drained.
"""

from __future__ import annotations

from ..model.hooks import REASON
from ..model.index import Index
from ..util.errors import InventoryIssue


def check(index: Index) -> list[InventoryIssue]:
    hc, policy = index.inv.health_check, index.inv.deploy.reboot
    if not hc.enabled or not any(n.role == "compute" for n in index.inv.nodes):
        return []
    out: list[InventoryIssue] = []
    if not policy.drain:
        out.append(InventoryIssue(("deploy", "reboot", "drain"),
                                  "the health check drains through deploy.reboot.drain, which is empty: give the "
                                  "scheduler's drain argv (scontrol update nodename={hosts} state=drain "
                                  "reason={reason}), or health_check.enabled: false", rule="INV-HEALTH"))
    elif not any(REASON in part for part in policy.drain):
        out.append(InventoryIssue(("deploy", "reboot", "drain"),
                                  "deploy.reboot.drain names no {reason}: the health check could not tell its own "
                                  "drains from a person's and would never re-admit a node (reason={reason})",
                                  rule="INV-HEALTH"))
    if not policy.resume:
        out.append(InventoryIssue(("deploy", "reboot", "resume"),
                                  "the health check re-admits a node it drained through deploy.reboot.resume, "
                                  "which is empty: give the scheduler's resume argv (scontrol update "
                                  "nodename={hosts} state=resume)", rule="INV-HEALTH"))
    return out
