"""What a deploy says: the changes and the summary folded by outcome, the plan file (what a dry run predicts,
what a real run did, every host in full) and its JUnit form.

Hosts with one outcome (`outcome_key`: the same status, error, reboot need, notes and list of changes) are one
group, named by its node set (`gpu[0001-2048] (2,048 hosts)`, util/nodeset.py): the terminal gets each
group's change lines once, so 2,048 identical hosts print as many lines as one. Per-host detail (every diff,
every host's seconds) is in the plan file and `--junit`'s report.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..util.echo import one_line
from ..util.fsutil import write_atomic
from ..util.nodeset import fold
from .reboot import RebootOutcome
from .runner import HostResult

FAILING = ("unreachable", "failed", "skipped")
"""Statuses of hosts that did not finish: their groups come last in the summary, next to the totals."""


def change_keys(results: Sequence[HostResult]) -> set[tuple[str, str, str, str]]:
    """(host, component, kind, target) of every change: what a dry run and a real run must agree on."""
    return {(r.name, *c.key) for r in results for c in r.changes}


def outcome_key(r: HostResult) -> tuple[Any, ...]:
    """What makes two hosts' outcomes the same: status, error, reboot need, notes and every change (component,
    kind, target, detail; not the diff, which differs wherever a file is per host: netplan's addresses)."""
    return (r.status, r.error, r.reboot or "", tuple(r.notes),
            tuple((c.component, c.kind, c.target, c.detail) for c in r.changes))


@dataclass(frozen=True)
class Group:
    """Hosts with one outcome, in the order they were deployed; `first` speaks for them all."""

    results: tuple[HostResult, ...]
    nodeset: str

    @property
    def first(self) -> HostResult:
        return self.results[0]

    @property
    def label(self) -> str:
        """`gpu[0001-2048] (2,048 hosts)`, or the host's name alone."""
        n = len(self.results)
        return self.nodeset if n == 1 else f"{self.nodeset} ({n:,} hosts)"

    @property
    def seconds(self) -> str:
        """The group's seconds: one figure, or the fastest and slowest host's (`0.81-2.40`)."""
        low = min(r.seconds for r in self.results)
        high = max(r.seconds for r in self.results)
        return f"{low:.2f}" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}-{high:.2f}"

    @property
    def detail(self) -> str:
        r = self.first
        return r.error or "; ".join(filter(None, [r.reboot and f"REBOOT NEEDED: {r.reboot}", *r.notes[:1]]))


def fold_results(results: Sequence[HostResult]) -> list[Group]:
    """The results grouped by outcome: groups in the order of their first host, failing ones last."""
    by_key: dict[tuple[Any, ...], list[HostResult]] = {}
    for r in results:
        by_key.setdefault(outcome_key(r), []).append(r)
    groups = [Group(tuple(rs), fold(r.name for r in rs)) for rs in by_key.values()]
    return sorted(groups, key=lambda g: g.first.status in FAILING)


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def to_json(results: Sequence[HostResult], *, engine: str, dry_run: bool, env: str) -> dict[str, Any]:
    """The plan/result document: every host in full, the totals, and the hosts folded by outcome."""
    return {
        "environment": env, "engine": engine, "dry_run": dry_run,
        "hosts": {r.name: {
            "status": r.status, "error": r.error, "notes": r.notes, "reboot": r.reboot,
            "seconds": round(r.seconds, 3),
            "changes": [{"component": c.component, "kind": c.kind, "target": c.target, "detail": c.detail,
                         "diff": c.diff} for c in r.changes],
        } for r in results},
        "totals": totals(results),
        "groups": [{"hosts": g.nodeset, "count": len(g.results), "status": g.first.status,
                    "changes": len(g.first.changes), "error": g.first.error} for g in fold_results(results)],
    }


def totals(results: Sequence[HostResult]) -> dict[str, int]:
    out: dict[str, int] = {"hosts": len(results), "changes": sum(len(r.changes) for r in results)}
    for r in results:
        out[r.status] = out.get(r.status, 0) + 1
    return out


def totals_line(results: Sequence[HostResult]) -> str:
    """`2,048 host(s), 96,256 change(s): changed 2,046, failed 2`."""
    t = totals(results)
    parts = ", ".join(f"{k} {v:,}" for k, v in t.items() if k not in ("hosts", "changes"))
    return f"{t['hosts']:,} host(s), {t['changes']:,} change(s)" + (f": {parts}" if parts else "")


def write_plan(path: Path, data: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def format_changes(results: Sequence[HostResult], *, diffs: bool) -> str:
    """Each group's changes once: `== gpu[0001-2048] (2,048 hosts): 47 changes`, then its change lines (and
    diffs: a diff that differs between the group's hosts is shown for its first host, and said so)."""
    lines: list[str] = []
    for g in fold_results(results):
        if not g.first.changes:
            continue
        lines.append(f"== {g.label}: {plural(len(g.first.changes), 'change')}")
        for i, c in enumerate(g.first.changes):
            lines.append(f"  [{c.component}] {c.kind} {c.target}: {c.detail}")
            if not (diffs and c.diff):
                continue
            variants = len({r.changes[i].diff for r in g.results})
            if variants > 1:
                lines.append(f"    (the diff differs between these hosts, {variants:,} variants: {g.first.name}'s "
                             "below; every host's is in the plan file)")
            lines += ["    " + d for d in c.diff.rstrip("\n").split("\n")]
    return "\n".join(lines)


def summary_rows(results: Sequence[HostResult]) -> list[tuple[str, str, str, str, str]]:
    """(HOST, STATUS, CHANGES, SECONDS, DETAIL) for each group: a node set and its count, the changes of
    each of its hosts, the seconds (a range over a group), the error or first note."""
    return [(g.label, g.first.status, f"{len(g.first.changes):,}", g.seconds, g.detail)
            for g in fold_results(results)]


def format_summary(results: Sequence[HostResult]) -> str:
    """The folded summary as plain text (the CLI prints the same rows as a rich table)."""
    if not results:
        return "0 host(s), 0 change(s)"
    rows = [("HOST", "STATUS", "CHANGES", "SECONDS", "DETAIL"), *summary_rows(results)]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [f"{h:<{widths[0]}}  {s:<{widths[1]}}  {c:>{widths[2]}}  {t:>{widths[3]}}  {d}".rstrip()
             for h, s, c, t, d in rows]
    return "\n".join([*lines, totals_line(results)])


def fold_reboots(reboots: Sequence[RebootOutcome]) -> list[str]:
    """`reboot gpu[0001-0512] (512 hosts): ...`: the reboot outcomes, hosts with one message together."""
    by_message: dict[tuple[bool, str], list[str]] = {}
    for o in reboots:
        by_message.setdefault((o.done, o.message), []).append(o.host)
    lines = []
    for (_, message), hosts in by_message.items():
        names = fold(hosts)
        lines.append(f"reboot {names if len(hosts) == 1 else f'{names} ({len(hosts):,} hosts)'}: {message}")
    return lines


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    """`text` with every character XML 1.0 cannot hold (C0 controls, surrogates) as its escape."""
    return _NOT_XML.sub(lambda m: one_line(m.group()), text)


def to_junit(results: Sequence[HostResult], *, env: str, engine: str, dry_run: bool) -> str:
    """JUnit XML, one test case per host: a failed host is a failure, an unreachable one an error, a host
    not started (past `--max-fail-percent`) skipped; each case's system-out lists the host's changes."""
    import xml.etree.ElementTree as ET

    t = totals(results)
    suites = ET.Element("testsuites", name="clusterforge deploy")
    suite = ET.SubElement(suites, "testsuite", name=_xml(f"{'dry run' if dry_run else 'deploy'} {env} ({engine})"),
                          tests=str(len(results)), failures=str(t.get("failed", 0)),
                          errors=str(t.get("unreachable", 0)), skipped=str(t.get("skipped", 0)),
                          time=f"{sum(r.seconds for r in results):.3f}")
    for r in results:
        case = ET.SubElement(suite, "testcase", classname=f"clusterforge.deploy.{_xml(env)}", name=_xml(r.name),
                             time=f"{r.seconds:.3f}")
        if r.status in FAILING:
            tag = {"failed": "failure", "unreachable": "error", "skipped": "skipped"}[r.status]
            ET.SubElement(case, tag, type=r.status, message=_xml(r.error))
        text = [f"status: {r.status}", *(f"note: {n}" for n in r.notes),
                *([f"reboot needed: {r.reboot}"] if r.reboot else []),
                *(f"[{c.component}] {c.kind} {c.target}: {c.detail}" for c in r.changes)]
        ET.SubElement(case, "system-out").text = _xml("\n".join(text) + "\n")
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
