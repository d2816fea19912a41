"""Level 3's response to a firing alert on a node: drain it, then move its jobs (docs/monitoring.md, "Level 3").

The monitoring node's drain hook (templates/monitoring/drain-hook.py.j2) runs this module, embedded verbatim:
nothing of clusterforge is installed there, so it is the Python standard library only and takes its policy as
the JSON the render writes (`render.monitoring_files`: drain-targets.json):

    {"hosts": {"gpu01": {"drain": [argv with {reason}], "migrate": true}, ...},
     "reason": "cf-alert:", "health_reason": "cf-health:",
     "migrate": null | {"how": "requeue" | "requeuehold" | "none", "alerts": [names, or empty: every one],
                        "grace_s": N, "signal": "USR1", "after": "drain" | "reboot",
                        "jobs": argv {host}, "signal_job": argv {job} {signal}, "requeue": argv {job},
                        "requeuehold": argv {job}, "reboot": argv {host} {reason}, "where": argv {jobs}},
     "alertmanagers": ["http://127.0.0.1:9093"]}

For each firing level 3 alert whose `host` is a node of the file, once per firing (alert name, host and the
time it started: Alertmanager's repeats of one firing do nothing more):

1. drain the host (the inventory's deploy.reboot.drain, `{reason}` = "cf-alert: level 3 <alert>"); a failed
   drain ends it there (a job requeued onto a node still open to the scheduler could land on it again);
2. when the policy moves this alert's jobs and the node's: list the host's jobs; with a grace, signal each
   job's batch step (the `--signal=B:USR1@N` convention: the application writes its checkpoint) and wait
   the grace, then list again (a job that ended meanwhile is not requeued);
3. requeue (or requeuehold) each job, one call a job: a job the scheduler refuses (`--no-requeue`,
   JobRequeue=0) is reported by id with the scheduler's words and left running, never cancelled;
4. after: the node stays drained, or is rebooted (`{reason}` = the health check's prefix, so that only a
   passing health check returns it to service);
5. report: every step is a JSON line in the journal; when jobs were found, an alert `JobsMoved` (level 3, the
   host, `cause` = the alert) is posted to Alertmanager, which e-mails and pages it like any level 3, naming
   the jobs moved and refused; it is posted again every `refresh_s` with where the moved jobs run now
   (annotation `now`, from the `where` command), for REPORT_HOLD_S, so `clusterforge alerts` shows it.

Placeholders are filled in one pass, each argv element on its own (never a shell); job ids and alert names
from outside are checked against what they can be before they reach an argv.
"""

from __future__ import annotations

import datetime
import json
import re
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable
from typing import Any

REPORT_ALERT = "JobsMoved"
"""The alert the response posts about itself: never responded to."""
REPORT_HOLD_S = 6 * 3600
"""How long a JobsMoved report stays active (re-posted with where its jobs run now)."""
HOOK_TIMEOUT_S = 300
MAX_JOBS = 4096
"""At most this many jobs listed on one node: more is not a node's job list."""

JOB_ID = re.compile(r"^[0-9]{1,12}(?:_[0-9]{1,9})?$")
"""A Slurm job id as squeue prints it: 1234, or an array task 1234_7."""
ALERT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_PLACEHOLDER = re.compile(r"\{(host|reason|job|jobs|signal)\}")

Runner = Callable[[list[str]], tuple[int, str, str]]
"""argv -> (exit status, stdout, stderr); never a shell."""


def run_argv(argv: list[str]) -> tuple[int, str, str]:
    try:
        proc = subprocess.run(argv, check=False, timeout=HOOK_TIMEOUT_S, capture_output=True, text=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return 127, "", str(exc)[:300]
    return proc.returncode, proc.stdout, proc.stderr


def fill(template: Iterable[str], **values: str) -> list[str]:
    """Each element with its placeholders replaced in one pass (a value holding `{job}` text stays as it is); a
    placeholder without a value is left as written."""
    return [_PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), part) for part in template]


def firing(payload: Any) -> list[tuple[str, str, str]]:
    """(alert name, host, startsAt) of every firing level 3 alert with a host label, in order, once each; the
    response's own report (REPORT_ALERT) left out. ValueError when the payload is not Alertmanager's."""
    if not isinstance(payload, dict) or not isinstance(payload.get("alerts"), list):
        raise ValueError("not an Alertmanager webhook payload (no alerts list)")
    out: list[tuple[str, str, str]] = []
    for alert in payload["alerts"]:
        if not isinstance(alert, dict) or alert.get("status") != "firing":
            continue
        labels = alert.get("labels")
        if not isinstance(labels, dict) or str(labels.get("level")) != "3" or not isinstance(labels.get("host"), str):
            continue
        name = labels.get("alertname")
        name = name if isinstance(name, str) and ALERT_NAME.match(name) else "unnamed"
        if name == REPORT_ALERT:
            continue
        key = (name, labels["host"], str(alert.get("startsAt", "")))
        if key not in out:
            out.append(key)
    return out


def job_ids(text: str) -> list[str]:
    """The job ids of a job list (`squeue -h -o %i`: one a line, its first word); ValueError naming the line
    that is not one."""
    out: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        word = line.strip().split(maxsplit=1)[0] if line.strip() else ""
        if not word:
            continue
        if not JOB_ID.match(word):
            raise ValueError(f"line {n}: {line.strip()[:80]!r} is not a job id")
        if word not in out:
            out.append(word)
    if len(out) > MAX_JOBS:
        raise ValueError(f"{len(out)} jobs: more than {MAX_JOBS} on one node is not a job list")
    return out


def placements(text: str) -> dict[str, str]:
    """job id -> where it is now ("RUNNING on gpu04", "PENDING"), from `squeue -h -o %i|%T|%N`; lines that are
    not that are skipped (this is a report, not a decision)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 3 or not JOB_ID.match(parts[0]):
            continue
        state, nodes = parts[1].strip() or "?", parts[2].strip()
        out[parts[0]] = f"{state} on {nodes}" if nodes and nodes != "(null)" else state
    return out


def _now_text(clock: float) -> str:
    return datetime.datetime.fromtimestamp(clock, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def post_alerts(url: str, alerts: list[dict[str, Any]]) -> None:
    """POST alerts to an Alertmanager's v2 API (its own loopback or the monitoring servers')."""
    request = urllib.request.Request(url.rstrip("/") + "/api/v2/alerts", data=json.dumps(alerts).encode("utf-8"),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()


class Responder:
    """The response, for every alert the webhook brings; thread-safe. `journal`: the path of the JSON-lines
    journal (read back at start, so a restarted hook does not respond twice to one firing)."""

    def __init__(self, config: dict[str, Any], journal: str | None = None, *, run: Runner = run_argv,
                 post: Callable[[str, list[dict[str, Any]]], None] = post_alerts,
                 clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep,
                 emit: Callable[[str], None] = lambda line: print(line, flush=True), refresh_s: float = 30.0) -> None:
        self.hosts: dict[str, dict[str, Any]] = config["hosts"]
        self.policy: dict[str, Any] | None = config.get("migrate")
        self.reason: str = config.get("reason", "cf-alert:")
        self.health_reason: str = config.get("health_reason", "cf-health:")
        self.alertmanagers: list[str] = list(config.get("alertmanagers") or [])
        self.journal, self.run, self.post, self.clock, self.sleep, self.emit = journal, run, post, clock, sleep, emit
        self.refresh_s = refresh_s
        self.seen: set[tuple[str, str, str]] = set()
        self.reports: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.lock = threading.Lock()
        if journal:
            self._replay(journal)

    # the journal -------------------------------------------------------------------------------------
    def record(self, entry: dict[str, Any]) -> dict[str, Any]:
        entry = {"time": _now_text(self.clock()), **entry}
        line = json.dumps(entry, sort_keys=True)
        with self.lock:
            self.emit(line)
            if self.journal:
                with open(self.journal, "a", encoding="utf-8") as fh:
                    fh.write(line + "\n")
        return entry

    def _replay(self, path: str) -> None:
        try:
            with open(path, encoding="utf-8") as fh:
                lines = fh.readlines()
        except OSError:
            return
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in ("alert", "host")):
                continue
            key = (entry["alert"], entry["host"], str(entry.get("starts", "")))
            if entry.get("event") in ("drain", "migration"):
                self.seen.add(key)
            if entry.get("event") == "migration" and entry.get("moved") is not None:
                self.reports[key] = entry

    # the webhook -------------------------------------------------------------------------------------
    def accept(self, payload: Any) -> list[tuple[str, str, str]]:
        """The firings of `payload` not responded to yet, marked as taken (ValueError: not a webhook payload)."""
        new = []
        with self.lock:
            for key in firing(payload):
                if key not in self.seen:
                    self.seen.add(key)
                    new.append(key)
        return new

    def handle(self, payload: Any, background: bool = True) -> list[tuple[str, str, str]]:
        """Respond to every new firing of `payload`: each in its own thread (Alertmanager's webhook call returns
        at once; a grace may last minutes), or here and now."""
        new = self.accept(payload)
        for key in new:
            if background:
                threading.Thread(target=self.respond, args=key, daemon=True).start()
            else:
                self.respond(*key)
        return new

    # the response ------------------------------------------------------------------------------------
    def _step(self, base: dict[str, Any], event: str, argv: list[str], **extra: Any) -> tuple[int, str, str]:
        code, out, err = self.run(argv)
        said = (err or out).strip().splitlines()
        self.record({**base, "event": event, "argv": argv, "exit": code, **extra,
                     **({"said": said[0][:300]} if code != 0 and said else {})})
        return code, out, err

    def _jobs(self, base: dict[str, Any], host: str) -> list[str] | None:
        assert self.policy is not None
        code, out, err = self.run(fill(self.policy["jobs"], host=host))
        if code != 0:
            self.record({**base, "event": "jobs", "exit": code, "said": (err or out).strip()[:300]})
            return None
        try:
            jobs = job_ids(out)
        except ValueError as exc:
            self.record({**base, "event": "jobs", "exit": code, "said": f"not a job list: {exc}"})
            return None
        self.record({**base, "event": "jobs", "exit": 0, "jobs": jobs})
        return jobs

    def moves(self, alert: str, host: str) -> bool:
        """Whether the policy moves the jobs of `alert` on `host`."""
        p = self.policy
        if p is None or p.get("how", "none") == "none" or not self.hosts.get(host, {}).get("migrate"):
            return False
        return not p.get("alerts") or alert in p["alerts"]

    def respond(self, alert: str, host: str, starts: str) -> dict[str, Any]:
        """Drain `host`, then move its jobs as the policy says; the migration's journal entry (or the drain's)."""
        base = {"alert": alert, "host": host, "starts": starts}
        target = self.hosts.get(host)
        if target is None:
            return self.record({**base, "event": "ignored", "why": "not a node of the inventory"})
        code, _, _ = self._step(base, "drain", fill(target["drain"], reason=f"{self.reason} level 3 {alert}"))
        if not self.moves(alert, host):
            return {**base, "event": "drain", "exit": code}
        assert self.policy is not None
        p = self.policy
        if code != 0:
            return self.record({**base, "event": "migration", "outcome": "not moved: the drain failed",
                                "moved": [], "refused": [], "ended": []})
        jobs = self._jobs(base, host)
        if jobs is None:
            return self.record({**base, "event": "migration", "outcome": "not moved: the job list failed",
                                "moved": [], "refused": [], "ended": []})
        ended: list[str] = []
        if jobs and p.get("grace_s", 0) > 0:
            for job in jobs:
                self._step(base, "signal", fill(p["signal_job"], job=job, signal=p.get("signal", "USR1")), job=job)
            self.sleep(float(p["grace_s"]))
            again = self._jobs(base, host)
            if again is not None:
                ended = [j for j in jobs if j not in again]
                jobs = [j for j in jobs if j in again]
        moved: list[str] = []
        refused: list[dict[str, str]] = []
        for job in jobs:
            code, out, err = self._step(base, p["how"], fill(p[p["how"]], job=job), job=job)
            if code == 0:
                moved.append(job)
            else:
                said = (err or out).strip().splitlines()
                refused.append({"job": job, "said": said[0][:300] if said else f"exit {code}"})
        if p.get("after") == "reboot":
            why = f"{self.health_reason} reboot after level 3 {alert}: back when the health check passes"
            self._step(base, "reboot", fill(p["reboot"], host=host, reason=why))
        outcome = ("no jobs on the node" if not (moved or refused or ended) else
                   f"{len(moved)} moved, {len(refused)} refused (left running), {len(ended)} ended in the grace")
        entry = self.record({**base, "event": "migration", "how": p["how"], "moved": moved, "refused": refused,
                             "ended": ended, "outcome": outcome})
        if moved or refused:
            with self.lock:
                self.reports[(alert, host, starts)] = entry
            self.publish()
        return entry

    # the report --------------------------------------------------------------------------------------
    def report_alerts(self) -> list[dict[str, Any]]:
        """The JobsMoved alerts of the reports still held, with where their moved jobs are now."""
        now = self.clock()
        with self.lock:
            held = [(k, e) for k, e in self.reports.items() if now - _parse_time(e.get("time")) < REPORT_HOLD_S]
        where: dict[str, str] = {}
        moved_all = sorted({j for _, e in held for j in e.get("moved", [])})
        if moved_all and self.policy is not None and self.policy.get("where"):
            code, out, _ = self.run(fill(self.policy["where"], jobs=",".join(moved_all)))
            if code == 0:
                where = placements(out)
        out_alerts = []
        for (alert, host, _starts), e in held:
            moved, refused = list(e.get("moved", [])), [r["job"] for r in e.get("refused", [])]
            summary = f"{len(moved)} job(s) moved off {host} for {alert}" + (f": {', '.join(moved)}" if moved else "")
            if refused:
                summary += f"; {len(refused)} refused by the scheduler, left running: {', '.join(refused)}"
            now_text = "; ".join(f"{j} {where.get(j, 'not listed (ended)' if where else 'unknown')}" for j in moved)
            out_alerts.append({
                "labels": {"alertname": REPORT_ALERT, "host": host, "level": "3", "cause": alert},
                "annotations": {"summary": summary, "moved": ",".join(moved), "refused": ",".join(refused),
                                "how": str(e.get("how", "")), "now": now_text},
                "startsAt": e.get("time"),
                "endsAt": _now_text(now + max(300.0, 4 * self.refresh_s)),
            })
        return out_alerts

    def publish(self) -> None:
        """Post the held reports to every Alertmanager (one that does not answer is noted, the rest go on)."""
        alerts = self.report_alerts()
        if not alerts:
            return
        for url in self.alertmanagers:
            try:
                self.post(url, alerts)
            except (OSError, ValueError) as exc:
                self.record({"event": "report", "alert": REPORT_ALERT, "host": "", "url": url,
                             "error": str(exc)[:300]})

    def refresh_forever(self) -> None:
        while True:
            self.sleep(self.refresh_s)
            self.publish()


def _parse_time(text: Any) -> float:
    try:
        return datetime.datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.UTC).timestamp()
    except ValueError:
        return 0.0
