"""Per-host summary and the plan file (what a dry run predicts, what a real run did)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..util.fsutil import write_atomic
from .runner import HostResult


def change_keys(results: Sequence[HostResult]) -> set[tuple[str, str, str, str]]:
    """(host, component, kind, target) of every change: what a dry run and a real run must agree on."""
    return {(r.name, *c.key) for r in results for c in r.changes}


def to_json(results: Sequence[HostResult], *, engine: str, dry_run: bool, env: str) -> dict[str, Any]:
    return {
        "environment": env, "engine": engine, "dry_run": dry_run,
        "hosts": {r.name: {
            "status": r.status, "error": r.error, "notes": r.notes, "reboot": r.reboot,
            "seconds": round(r.seconds, 3),
            "changes": [{"component": c.component, "kind": c.kind, "target": c.target, "detail": c.detail,
                         "diff": c.diff} for c in r.changes],
        } for r in results},
        "totals": totals(results),
    }


def totals(results: Sequence[HostResult]) -> dict[str, int]:
    out: dict[str, int] = {"hosts": len(results), "changes": sum(len(r.changes) for r in results)}
    for r in results:
        out[r.status] = out.get(r.status, 0) + 1
    return out


def write_plan(path: Path, data: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def format_changes(results: Sequence[HostResult], *, diffs: bool) -> str:
    lines: list[str] = []
    for r in results:
        if not r.changes:
            continue
        lines.append(f"== {r.name}: {len(r.changes)} change(s)")
        for c in r.changes:
            lines.append(f"  [{c.component}] {c.kind} {c.target}: {c.detail}")
            if diffs and c.diff:
                lines += ["    " + d for d in c.diff.rstrip("\n").split("\n")]
    return "\n".join(lines)


def format_summary(results: Sequence[HostResult]) -> str:
    if not results:
        return "0 host(s), 0 change(s)"
    width = max((len(r.name) for r in results), default=4)
    lines = [f"{'HOST':<{width}}  {'STATUS':<11}  {'CHANGES':>7}  {'SECONDS':>7}  DETAIL"]
    for r in results:
        detail = r.error or ("; ".join(filter(None, [r.reboot and f"REBOOT NEEDED: {r.reboot}", *r.notes[:1]])))
        lines.append(f"{r.name:<{width}}  {r.status:<11}  {len(r.changes):>7}  {r.seconds:>7.2f}  {detail}")
    t = totals(results)
    parts = ", ".join(f"{k} {v}" for k, v in t.items() if k not in ("hosts", "changes"))
    lines.append(f"{t['hosts']} host(s), {t['changes']} change(s): {parts}")
    return "\n".join(lines)
