"""Active alerts (Alertmanager's /api/v2/alerts JSON) located on the floor from the model.

Pure: text in, records out. Each alert is placed by its `host` label (rack and U from the
inventory); a port alert (`device`, `port`) also by the cable in that port: its id, both ends
with their racks and units, and the trunk and patch panels it rides, with a repair instruction
in `validate`'s words ("clean or reseat the optic at leaf01 port 17: cable C-0412, trunk ...").
Like a finding, a located alert names what it is about by id: `host`, `switch` (the switch at the far
end of the port's cable, or the host label when that is a switch) and `cable` (the cable's id).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..model.index import Index
from ..model.monitoring import PORT_ALERTS
from ..model.place_text import link_floor, route_text
from ..respond.level3 import JOB_ID, REPORT_ALERT


@dataclass(frozen=True)
class LocatedAlert:
    alertname: str
    level: int | None
    state: str  # active | suppressed (inhibited or silenced) | unprocessed
    since: str
    host: str | None
    switch: str | None  # the switch at the far end of the port's cable, or `host` when that names a switch
    rack: str | None
    u: int | None
    device: str | None
    port: int | None
    cable: str | None
    a_end: str | None
    b_end: str | None
    lanes: str | None
    where: str | None
    summary: str
    repair: str
    labels: dict[str, str]
    cause: str | None = None  # JobsMoved: the level 3 alert whose response moved the jobs
    jobs_moved: list[str] = field(default_factory=list)  # level 3: the jobs its response moved off the host
    jobs_refused: list[str] = field(default_factory=list)  # ... the scheduler would not requeue (left running)
    jobs_now: dict[str, str] = field(default_factory=dict)  # moved job -> where it is now ("RUNNING on gpu04")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_alerts(text: str) -> list[dict[str, Any]]:
    """Alertmanager's v2 alert list; ValueError naming what is wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(data, list):
        raise ValueError("not an alert list (Alertmanager's /api/v2/alerts returns a JSON array)")
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("labels"), dict):
            raise ValueError(f"alert {i}: no labels object")
    return data


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, str) and value.isdigit() else None


def locate(index: Index, alert: dict[str, Any]) -> LocatedAlert:
    labels = {str(k): str(v) for k, v in alert["labels"].items()}
    raw_notes, raw_status = alert.get("annotations"), alert.get("status")
    notes: dict[str, Any] = raw_notes if isinstance(raw_notes, dict) else {}
    status: dict[str, Any] = raw_status if isinstance(raw_status, dict) else {}
    name = labels.get("alertname", "?")
    host = labels.get("host")
    rack, u = labels.get("rack"), _int(labels.get("u"))
    if host is not None and host in index.places:
        rack, u = index.places[host]
    device, port = labels.get("device"), _int(labels.get("port"))
    cable_id = a_end = b_end = lanes = where = None
    switch = host if host is not None and host in index.switches else None
    repair = str(notes.get("repair", ""))
    if host is not None and device is not None and port is not None:
        cable = index.cable_at.get((host, device, port))
        if cable is not None:
            cable_id, a_end, b_end = cable.id, str(cable.a), str(cable.b)
            lanes = route_text(index, cable) or None
            here, far = ((cable.a, cable.b) if cable.a.key == (host, device, port) else (cable.b, cable.a))
            switch = switch or (far.device if far.hca is None else None)
            where = link_floor(index, here.key, far.key, cable)
            if name in PORT_ALERTS:
                at = f"{far.device} port {far.port}" if far.hca is None else f"{far.device} {far.hca} port {far.port}"
                repair = f"clean or reseat the optic at {at}: cable {cable.id}" + (f", {lanes}" if lanes else "")
                if name == "IbPortDown":
                    repair = "check both ends are seated and lit; " + repair
        else:
            where = f"{host} {device}/{port} (no cable declared in the inventory)"
    elif host is not None and rack is not None:
        where = f"rack {rack} U{u}"
    located = LocatedAlert(
        alertname=name, level=_int(labels.get("level")), state=str(status.get("state", "active")),
        since=str(alert.get("startsAt", "")), host=host, switch=switch, rack=rack, u=u, device=device, port=port,
        cable=cable_id, a_end=a_end, b_end=b_end, lanes=lanes, where=where,
        summary=str(notes.get("summary", "")), repair=repair, labels=labels,
    )
    if name == REPORT_ALERT:
        located = replace(located, cause=labels.get("cause"), jobs_moved=_ids(notes.get("moved")),
                          jobs_refused=_ids(notes.get("refused")), jobs_now=_now(notes.get("now")))
    return located


def _ids(text: object) -> list[str]:
    return [j for j in str(text or "").split(",") if JOB_ID.match(j)]


def _now(text: object) -> dict[str, str]:
    """`4101 RUNNING on gpu04; 4102 PENDING` (the report's `now`) as job -> where."""
    out: dict[str, str] = {}
    for item in str(text or "").split(";"):
        job, _, where = item.strip().partition(" ")
        if JOB_ID.match(job) and where:
            out[job] = where
    return out


def located_alerts(index: Index, text: str) -> list[LocatedAlert]:
    """Every alert of the list, highest level first, then by host and name."""
    out = [locate(index, a) for a in parse_alerts(text)]
    # a level 3 alert carries what its response did: the JobsMoved report about it (cause, host)
    reports = {(a.cause, a.host): a for a in out if a.alertname == REPORT_ALERT}
    out = [replace(a, jobs_moved=r.jobs_moved, jobs_refused=r.jobs_refused, jobs_now=r.jobs_now)
           if a.alertname != REPORT_ALERT and (r := reports.get((a.alertname, a.host))) is not None else a
           for a in out]
    return sorted(out, key=lambda a: (-(a.level or 0), a.host or "", a.alertname, a.device or "", a.port or 0))
