"""Validation reports: a rich terminal summary, JSON, JUnit XML, and the exit code."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from ..util.errors import ExitCode, format_path
from .findings import RULES

if TYPE_CHECKING:  # imported by validate.quick's clean report too: nothing heavy at import
    from rich.console import Console

    from .run import Report

_DETAILS = 12  # detail lines printed per finding on the terminal (JSON and JUnit carry all)


def exit_code(report: Report) -> ExitCode:
    if report.unreachable:
        return ExitCode.UNREACHABLE
    if report.errors:
        return ExitCode.FINDINGS
    return ExitCode.OK


def to_json(report: Report) -> dict[str, Any]:
    return {
        "ok": report.errors == 0,
        "fabric_checked": report.fabric_checked,
        "hosts_checked": report.hosts_checked,
        "counts": dict(Counter(f"{f.rule}:{f.severity}" for f in report.findings)),
        "findings": [
            {
                "rule": f.rule,
                "severity": f.severity,
                "subject": f.subject,
                "host": f.host,
                "switch": f.switch,
                "cable": f.cable,
                "port": f.port,
                "message": f.message,
                "expected": f.expected,
                "observed": f.observed,
                "action": f.action,
                "floor": f.floor,
                "details": list(f.details),
                "inventory": format_path(f.inventory) or None,
                "where": f.where,
            }
            for f in report.findings
        ],
    }


def print_summary(console: Console, report: Report, top: int = 20) -> None:
    scope = "fabric" if report.fabric_checked else "no fabric"
    console.print(f"validated: {scope}, {len(report.hosts_checked)} host(s)")
    if not report.findings:
        console.print("[bold green]clean[/]: the fabric and hosts match the inventory")
        return
    from rich.markup import escape
    from rich.table import Table

    counts = Counter((f.rule, f.severity) for f in report.findings)
    table = Table(title="findings by rule", title_justify="left")
    table.add_column("rule")
    table.add_column("severity")
    table.add_column("count", justify="right")
    table.add_column("meaning")
    for (rule, sev), n in sorted(counts.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        table.add_row(rule, sev, str(n), RULES[rule])
    console.print(table)
    for f in report.findings[:top]:
        style = "red" if f.severity == "error" else "yellow"
        console.print(f"[{style}]{f.rule:<18} {f.severity:<7}[/] {escape(f.message)}", markup=True, highlight=False)
        if f.action:
            console.print(f"    → {f.action}", markup=False)
        if f.floor:
            console.print(f"    where: {f.floor}", markup=False)
        for line in f.details[:_DETAILS]:
            console.print(f"      · {line}", markup=False)
        if len(f.details) > _DETAILS:
            console.print(f"      · ... and {len(f.details) - _DETAILS} more (--format json for all)", markup=False)
        if f.where:
            console.print(f"    declared at {f.where}", markup=False)
    if len(report.findings) > top:
        console.print(f"... and {len(report.findings) - top} more (--format json for all)")


_IDS = ("host", "switch", "cable", "port")
"""A finding's ids, in `--format json` and in JUnit (a testcase's properties, each failure's text)."""


def to_junit(report: Report) -> str:
    """One test case per checked subject; a finding is a failure of its subject's case."""
    import xml.etree.ElementTree as ET

    suites = ET.Element("testsuites", name="clusterforge validate")
    by_suite: dict[str, list[Any]] = {"fabric": [], "hosts": []}
    for f in report.findings:
        by_suite["fabric" if f.rule.startswith("FAB") else "hosts"].append(f)
    for name, findings in by_suite.items():
        of_subject: dict[str, list[Any]] = {}
        for f in findings:  # grouped once: a whole fabric down is ~10^5 findings
            of_subject.setdefault(f.subject, []).append(f)
        subjects = set(of_subject)
        cases = sorted(subjects | (set(report.hosts_checked) if name == "hosts" else set()))
        if name == "fabric" and report.fabric_checked and not findings:
            cases = ["fabric"]
        suite = ET.SubElement(
            suites, "testsuite", name=name, tests=str(len(cases)), failures=str(len(subjects))
        )
        for subject in cases:
            case = ET.SubElement(suite, "testcase", classname=f"clusterforge.{name}", name=subject)
            failures = of_subject.get(subject, ())
            # what the case is about, by id (host, switch, cable, port: as `--format json` has them), each once
            named = sorted({(key, value) for f in failures for key in _IDS if (value := getattr(f, key))})
            if named:
                props = ET.SubElement(case, "properties")
                for key, value in named:
                    ET.SubElement(props, "property", name=key, value=value)
            for f in failures:
                fail = ET.SubElement(case, "failure", type=f.rule, message=f.message)
                fail.text = (
                    f"severity: {f.severity}\nexpected: {f.expected}\nobserved: {f.observed}\n"
                    f"action: {f.action}\n"
                    + (f"where: {f.floor}\n" if f.floor else "")
                    + "".join(f"{key}: {value}\n" for key in _IDS if (value := getattr(f, key)))
                    + "".join(f"  {line}\n" for line in f.details)
                )
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
