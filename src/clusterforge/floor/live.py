"""The floor page's live state (issue #37; docs/floor.md): what each source says now, by host, switch and cable.

Sources: Alertmanager's active alerts (its /api/v2/alerts JSON, located on the floor by alerts/view.py), the last
`validate --format json` report and the last `accept --format json` judgement (their findings name a host, a
switch and a cable by id), and the scheduler's nodes out of service (`deploy.reboot.reasons`' output, `sinfo -R`:
each declared node's reason, who set it and since when; a node the inventory does not declare is counted, not
placed). Each source is read by the caller (the server, floor/serve.py) and handed in as text
with the time it was read, or as the error that stopped it; a source that fails keeps what it last said, marked
stale with the time it was last read, so the page shows "unreachable, last seen at T" instead of a stale green.
Pure: texts and times in, the document out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..alerts.view import located_alerts
from ..model.index import Index
from ..parse import ParseError
from ..parse.sinfo_reasons import parse as parse_reasons

SOURCES = ("alertmanager", "validate", "accept", "scheduler")


@dataclass(frozen=True)
class Reading:
    """What a source gave the last time it was asked."""

    text: str | None
    """Its output (None: never read, or it failed and nothing was read before)."""
    read_at: str | None
    """When `text` was read (ISO 8601, UTC)."""
    error: str | None = None
    """Why the latest attempt failed (None: it worked); `text` is then the last good one, if any."""
    where: str = ""
    """The URL or file it is read from, for the banner."""


def live_doc(index: Index, readings: dict[str, Reading], now: str) -> dict[str, Any]:
    """Every host, switch and cable something is said about, with the alerts and findings saying it, and each
    source's state: ok, stale (failed now, shown as last read) or missing (never read)."""
    marks: dict[str, dict[str, dict[str, Any]]] = {"hosts": {}, "switches": {}, "cables": {}}
    sources: dict[str, dict[str, Any]] = {}
    for name in SOURCES:
        r = readings.get(name)
        if r is None:
            continue
        state = "ok" if r.error is None and r.text is not None else ("stale" if r.text is not None else "missing")
        problem = r.error
        extra: dict[str, Any] = {}
        if r.text is not None:
            try:
                if name == "alertmanager":
                    _alerts(index, r.text, marks)
                elif name == "scheduler":
                    extra["undeclared"] = _drained(index, r.text, marks)
                else:
                    _findings(r.text, name, marks)
            except ValueError as exc:
                state, problem = "bad", f"{r.where}: {exc}"
        sources[name] = {"state": state, "where": r.where, "read_at": r.read_at, "error": problem, **extra}
    return {"schema": 1, "now": now, "sources": sources, **marks}


def _mark(marks: dict[str, dict[str, dict[str, Any]]], kind: str, key: str | None) -> dict[str, Any] | None:
    if not key:
        return None
    return marks[kind].setdefault(key, {"level": 0, "alerts": [], "findings": []})


def _alerts(index: Index, text: str, marks: dict[str, dict[str, dict[str, Any]]]) -> None:
    for a in located_alerts(index, text):
        if a.state != "active":
            continue
        item = {"alertname": a.alertname, "level": a.level, "since": a.since, "summary": a.summary,
                "repair": a.repair, "cable": a.cable, "where": a.where}
        for kind, key in (("hosts", a.host if a.host in index.nodes else None), ("switches", a.switch),
                          ("cables", a.cable)):
            m = _mark(marks, kind, key)
            if m is not None:
                m["alerts"].append(item)
                m["level"] = max(m["level"], a.level or 0)


def _findings(text: str, source: str, marks: dict[str, dict[str, dict[str, Any]]]) -> None:
    """A `validate` or `accept` JSON report's findings by their ids; ValueError when the text is not one."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON (line {exc.lineno}: {exc.msg})") from None
    findings = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(findings, list):
        raise ValueError(f"not a {source} --format json report (no findings list)")
    for i, f in enumerate(findings):
        if not isinstance(f, dict) or not isinstance(f.get("rule"), str):
            raise ValueError(f"finding {i}: no rule")
        item = {"source": source, "rule": f["rule"], "severity": str(f.get("severity", "")),
                "subject": str(f.get("subject", "")), "message": str(f.get("message", "")),
                "action": str(f.get("action", "")), "cable": f.get("cable")}
        for kind, field in (("hosts", "host"), ("switches", "switch"), ("cables", "cable")):
            value = f.get(field)
            m = _mark(marks, kind, value if isinstance(value, str) else None)
            if m is not None:
                m["findings"].append(item)


def _drained(index: Index, text: str, marks: dict[str, dict[str, dict[str, Any]]]) -> int:
    """`sinfo -R`'s nodes on the floor (each declared node's first row); how many nodes it names that the
    inventory does not declare. ValueError when the text is not sinfo -R's output."""
    try:
        rows = parse_reasons(text)
    except ParseError as exc:
        raise ValueError(f"not sinfo -R's output ({exc})") from None
    undeclared: set[str] = set()
    for row in rows:
        for node in row.nodes:
            if node not in index.nodes:
                undeclared.add(node)
                continue
            m = _mark(marks, "hosts", node)
            if m is not None and "drained" not in m:
                m["drained"] = {"reason": row.reason, "user": row.user, "since": row.since, "state": row.state}
    return len(undeclared)
