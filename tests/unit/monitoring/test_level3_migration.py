"""Level 3 moves the jobs (issue #35; respond/level3.py): drain, signal and grace, requeue one job at a time, a
refused requeue reported and left running, the reboot path, once per firing across Alertmanager's repeats and a
restarted hook, the JobsMoved report; and `check`'s rules for the policy.

The scheduler here is a CONSTRUCTED stand-in (`Sched`: what squeue/scontrol/scancel answer, recorded); the real
Slurm runs in the lab test (tests/lab/test_job_migration_lab.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cf_lab_inventory import index_of, lab_data, lab_index
from clusterforge.alerts.drain import responder
from clusterforge.check import run_checks
from clusterforge.respond.level3 import REPORT_ALERT, Responder, fill, firing, job_ids, placements

DRAIN = ["scontrol", "update", "nodename={host}", "state=drain", "reason={reason}"]


class Sched:
    """A stand-in scheduler: `jobs` per node, jobs that refuse a requeue, every argv it was given."""

    def __init__(self, jobs: dict[str, list[str]], refuse: set[str] = frozenset(), fail: set[str] = frozenset()):
        self.jobs, self.refuse, self.fail = {h: list(j) for h, j in jobs.items()}, refuse, fail
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str]) -> tuple[int, str, str]:
        self.calls.append(argv)
        if argv[0] in self.fail or (argv[:2] == ["scontrol", "update"] and "drain" in self.fail):
            return 1, "", f"{argv[0]}: error: Unable to contact slurm controller"
        if argv[0] == "squeue" and "-w" in argv:
            return 0, "".join(f"{j}\n" for j in self.jobs.get(argv[argv.index("-w") + 1], [])), ""
        if argv[0] == "squeue" and "-j" in argv:
            return 0, "".join(f"{j}|RUNNING|gpu02\n" for j in argv[argv.index("-j") + 1].split(",")), ""
        if argv[:2] in (["scontrol", "requeue"], ["scontrol", "requeuehold"]):
            if argv[2] in self.refuse:
                return 1, "", f"scontrol: error: Requested operation is presently disabled for job {argv[2]}"
            for jobs in self.jobs.values():
                if argv[2] in jobs:
                    jobs.remove(argv[2])
        return 0, "", ""

    def verbs(self) -> list[str]:
        return [" ".join(a[:2]) for a in self.calls]


def _config(**migrate: Any) -> dict[str, Any]:
    data = lab_data()
    data["monitoring"]["alerts"]["page"]["migrate"] = migrate
    idx = index_of(data)
    assert not run_checks(idx), run_checks(idx)
    return idx


def _responder(sched: Sched, tmp: Path | None = None, posted: list[Any] | None = None, **migrate: Any) -> Responder:
    slept: list[float] = []
    hook = responder(_config(**migrate), DRAIN, run=sched, journal=str(tmp / "j.jsonl") if tmp else None,
                     post=lambda url, alerts: posted.append(alerts) if posted is not None else None,
                     sleep=slept.append, emit=lambda line: None)
    hook.slept = slept  # type: ignore[attr-defined]
    return hook


def _payload(*alerts: tuple[str, str, str], starts: str = "2026-12-07T10:00:00Z") -> dict[str, Any]:
    return {"alerts": [{"status": st, "startsAt": starts, "labels": {"alertname": name, "level": "3", "host": host}}
                       for name, host, st in alerts]}


def test_firing_takes_level_3_alerts_once_and_never_its_own_report() -> None:
    payload = _payload(("HbmTemperatureHigh", "gpu01", "firing"), ("HbmTemperatureHigh", "gpu01", "firing"),
                       (REPORT_ALERT, "gpu01", "firing"), ("GpuFallenOffBus", "gpu02", "resolved"),
                       ("bad name; rm", "gpu03", "firing"))
    assert firing(payload) == [("HbmTemperatureHigh", "gpu01", "2026-12-07T10:00:00Z"),
                               ("unnamed", "gpu03", "2026-12-07T10:00:00Z")]
    with pytest.raises(ValueError):
        firing({"alerts": "no"})


def test_job_lists_are_read_strictly_and_placements_leniently() -> None:
    assert job_ids("4101\n4102_3\n\n4101\n") == ["4101", "4102_3"]
    with pytest.raises(ValueError, match="line 2"):
        job_ids("4101\nslurm_load_jobs error: Unable to contact slurm controller\n")
    assert placements("4101|RUNNING|gpu02\n4102|PENDING|\ngarbage\n") == {"4101": "RUNNING on gpu02",
                                                                           "4102": "PENDING"}
    assert fill(["--signal={signal}", "{job}", "{host}"], job="{host}", signal="USR1") == ["--signal=USR1", "{host}",
                                                                                          "{host}"]


def test_drain_then_requeue_each_job_and_report_them(tmp_path: Path) -> None:
    sched, posted = Sched({"gpu03": ["4101", "4102"]}), []
    hook = _responder(sched, tmp_path, posted)
    hook.handle(_payload(("HbmTemperatureHigh", "gpu03", "firing")), background=False)
    assert sched.calls == [
        ["scontrol", "update", "nodename=gpu03", "state=drain", "reason=cf-alert: level 3 HbmTemperatureHigh"],
        ["squeue", "-h", "-w", "gpu03", "-o", "%i"],
        ["scontrol", "requeue", "4101"], ["scontrol", "requeue", "4102"],
        ["squeue", "-h", "-j", "4101,4102", "-o", "%i|%T|%N"]]
    journal = [json.loads(line) for line in (tmp_path / "j.jsonl").read_text().splitlines()]
    assert [e["event"] for e in journal] == ["drain", "jobs", "requeue", "requeue", "migration"]
    assert journal[-1]["moved"] == ["4101", "4102"] and journal[-1]["refused"] == []
    (report,) = posted[0]
    assert report["labels"] == {"alertname": REPORT_ALERT, "host": "gpu03", "level": "3",
                                "cause": "HbmTemperatureHigh"}
    assert report["annotations"]["moved"] == "4101,4102"
    assert report["annotations"]["now"] == "4101 RUNNING on gpu02; 4102 RUNNING on gpu02"


def test_alertmanagers_repeats_and_a_restarted_hook_respond_once(tmp_path: Path) -> None:
    sched = Sched({"gpu03": ["4101"]})
    hook = _responder(sched, tmp_path)
    payload = _payload(("HbmTemperatureHigh", "gpu03", "firing"))
    assert len(hook.handle(payload, background=False)) == 1
    assert hook.handle(payload, background=False) == []  # Alertmanager's repeat of the same firing
    again = _responder(sched, tmp_path)  # the hook restarted: it reads its journal back
    assert again.handle(payload, background=False) == []
    assert sched.verbs().count("scontrol update") == 1 and sched.verbs().count("scontrol requeue") == 1
    # the same alert firing again later (a new startsAt) is a new firing: drained again, nothing left to move
    later = _payload(("HbmTemperatureHigh", "gpu03", "firing"), starts="2026-12-07T14:00:00Z")
    assert len(again.handle(later, background=False)) == 1
    assert sched.verbs().count("scontrol update") == 2 and sched.verbs().count("scontrol requeue") == 1


def test_a_refused_requeue_is_reported_and_the_job_left_running(tmp_path: Path) -> None:
    sched, posted = Sched({"gpu03": ["4101", "4102"]}, refuse={"4102"}), []
    entry = _responder(sched, tmp_path, posted).respond("HbmTemperatureHigh", "gpu03", "t0")
    assert entry["moved"] == ["4101"]
    assert entry["refused"] == [{"job": "4102", "said": "scontrol: error: Requested operation is presently disabled "
                                                         "for job 4102"}]
    assert not any(a[0] == "scancel" for a in sched.calls)  # never cancelled
    assert sched.jobs["gpu03"] == ["4102"]
    notes = posted[0][0]["annotations"]
    assert (notes["moved"], notes["refused"]) == ("4101", "4102") and "left running: 4102" in notes["summary"]


def test_a_grace_signals_first_waits_and_skips_jobs_that_ended(tmp_path: Path) -> None:
    sched = Sched({"gpu03": ["4101", "4102"]})
    hook = _responder(sched, tmp_path, grace_s=90, signal="USR2")
    real = sched.__call__

    def ends_4102(argv: list[str]) -> tuple[int, str, str]:  # 4102 writes its checkpoint and exits in the grace
        if argv[0] == "scancel" and argv[-1] == "4102":
            sched.jobs["gpu03"].remove("4102")
        return real(argv)

    hook.run = ends_4102
    entry = hook.respond("HbmTemperatureHigh", "gpu03", "t0")
    assert [a for a in sched.calls if a[0] == "scancel"] == [["scancel", "--batch", "--signal=USR2", "4101"],
                                                              ["scancel", "--batch", "--signal=USR2", "4102"]]
    assert hook.slept == [90.0]  # type: ignore[attr-defined]
    assert (entry["moved"], entry["ended"]) == (["4101"], ["4102"])
    assert ["scontrol", "requeue", "4102"] not in sched.calls


def test_a_failed_drain_moves_nothing(tmp_path: Path) -> None:
    sched = Sched({"gpu03": ["4101"]}, fail={"drain"})
    entry = _responder(sched, tmp_path).respond("HbmTemperatureHigh", "gpu03", "t0")
    assert entry["outcome"] == "not moved: the drain failed" and sched.verbs() == ["scontrol update"]


def test_a_failed_job_list_moves_nothing_and_says_why(tmp_path: Path) -> None:
    sched = Sched({"gpu03": ["4101"]}, fail={"squeue"})
    entry = _responder(sched, tmp_path).respond("HbmTemperatureHigh", "gpu03", "t0")
    assert entry["outcome"] == "not moved: the job list failed"
    journal = [json.loads(line) for line in (tmp_path / "j.jsonl").read_text().splitlines()]
    assert "Unable to contact slurm controller" in journal[1]["said"]


def test_only_compute_nodes_and_the_listed_alerts_move_jobs() -> None:
    sched = Sched({"sm01": ["77"], "gpu03": ["4101"]})
    hook = _responder(sched, alerts=["GpuFallenOffBus"])
    hook.respond("NoMasterSubnetManager", "sm01", "t0")  # not a compute node: drained only
    hook.respond("HbmTemperatureHigh", "gpu03", "t0")    # not a listed alert: drained only
    assert sched.verbs() == ["scontrol update", "scontrol update"]
    hook.respond("GpuFallenOffBus", "gpu03", "t0")
    assert sched.verbs()[-2:] == ["scontrol requeue", "squeue -h"]


def test_requeuehold_and_the_reboot_path(tmp_path: Path) -> None:
    data = lab_data()
    assert data["deploy"]["reboot"]["resume"] and data["health_check"]["enabled"]
    sched = Sched({"gpu03": ["4101"]})
    hook = _responder(sched, tmp_path, how="requeuehold", after="reboot")
    hook.respond("GpuFallenOffBus", "gpu03", "t0")
    assert ["scontrol", "requeuehold", "4101"] in sched.calls
    reboot = [a for a in sched.calls if a[:2] == ["scontrol", "reboot"]]
    assert reboot == [["scontrol", "reboot", "ASAP", "reason=cf-health: reboot after level 3 GpuFallenOffBus: back "
                                                     "when the health check passes", "gpu03"]]
    assert sched.calls.index(reboot[0]) > sched.calls.index(["scontrol", "requeuehold", "4101"])


def test_a_node_without_jobs_is_drained_and_nothing_reported(tmp_path: Path) -> None:
    sched, posted = Sched({}), []
    entry = _responder(sched, tmp_path, posted).respond("HbmTemperatureHigh", "gpu03", "t0")
    assert entry["outcome"] == "no jobs on the node" and posted == []


def test_a_report_that_no_alertmanager_takes_is_journalled(tmp_path: Path) -> None:
    sched = Sched({"gpu03": ["4101"]})

    def down(url: str, alerts: object) -> None:
        raise OSError("connection refused")

    hook = responder(_config(), DRAIN, run=sched, journal=str(tmp_path / "j.jsonl"), post=down,
                     emit=lambda line: None)
    hook.respond("HbmTemperatureHigh", "gpu03", "t0")
    last = json.loads((tmp_path / "j.jsonl").read_text().splitlines()[-1])
    assert last["event"] == "report" and "connection refused" in last["error"]


def _issues(**migrate: Any) -> list[str]:
    data = lab_data()
    data["monitoring"]["alerts"]["page"]["migrate"] = migrate
    return [str(i) for i in run_checks(index_of(data))]


def test_check_wants_a_drain_before_a_migration() -> None:
    data = lab_data()
    data["monitoring"]["alerts"]["page"].update(drain=False, migrate={}, webhook="https://pager.invalid/hook")
    issues = [str(i) for i in run_checks(index_of(data))]
    assert any("migrate without drain" in i and "monitoring.alerts.page.migrate" in i for i in issues), issues
    data["monitoring"]["alerts"]["page"]["migrate"] = {"how": "none"}
    assert not run_checks(index_of(data))


@pytest.mark.parametrize(("field", "argv", "says"), [
    ("jobs", ["squeue", "-h", "-o", "%i"], "jobs names no {host}"),
    ("requeue", ["scontrol", "requeue"], "requeue names no {job}"),
    ("requeue", ["scontrol", "requeue", "{jobs}"], "requeue names no {job}"),
    ("requeue", ["scontrol", "requeue", "{job}", "{host}"], "requeue names {host}, which it is not given"),
    ("where", ["squeue", "-h", "-j", "{job}"], "where names no {jobs}"),
    ("jobs", [], "jobs is empty"),
])
def test_check_wants_each_command_s_placeholders(field: str, argv: list[str], says: str) -> None:
    issues = _issues(**{field: argv})
    assert any(says in i and f"migrate.{field}" in i for i in issues), issues


def test_check_wants_the_signal_s_job_only_with_a_grace() -> None:
    assert not _issues(signal_job=["scancel", "{host}"])
    assert any("signal_job names no {job}" in i for i in _issues(grace_s=60, signal_job=["scancel", "x"]))


def test_check_wants_a_way_back_for_a_reboot() -> None:
    data = lab_data()
    data["monitoring"]["alerts"]["page"]["migrate"] = {"after": "reboot"}
    data["deploy"]["reboot"]["resume"] = []
    data["health_check"]["enabled"] = False
    issues = [str(i) for i in run_checks(index_of(data))]
    assert any("after: reboot needs deploy.reboot.resume" in i for i in issues), issues
    assert any("after: reboot needs health_check.enabled" in i for i in issues), issues
    assert any("reboot names no {host}" in i for i in _issues(after="reboot", reboot=["scontrol", "reboot"]))


def test_check_moves_jobs_only_for_level_3_alerts() -> None:
    issues = _issues(alerts=["GpuTemperatureHigh", "HbmTemperatureHigh"])
    assert any("GpuTemperatureHigh is level 2 here" in i and "migrate.alerts[0]" in i for i in issues), issues
    assert not any("HbmTemperatureHigh" in i for i in issues)


def test_the_lab_inventory_moves_no_jobs_unless_it_says_so() -> None:
    assert lab_index().inv.monitoring.alerts.page.migrate is None  # type: ignore[union-attr]


def test_the_response_is_standard_library_only() -> None:
    """It runs embedded in the monitoring node's drain hook, where nothing of clusterforge is installed."""
    import ast
    import sys

    from clusterforge.respond import level3

    tree = ast.parse(Path(level3.__file__).read_text(encoding="utf-8"))
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {str(n.module).split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert names and names <= set(sys.stdlib_module_names) | {"__future__"}, names


def test_the_rendered_hook_moves_jobs_and_posts_its_report(tmp_path: Path) -> None:
    """The monitoring node's program as rendered for an inventory with a migration (python3 -I: nothing of
    clusterforge importable), a CONSTRUCTED stand-in scheduler on its PATH, a capture server as Alertmanager."""
    import subprocess
    import sys
    import threading
    import time
    import urllib.request
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from clusterforge.render import render_environment

    got: list[Any] = []

    class Capture(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            got.append((self.path, json.loads(self.rfile.read(int(self.headers["Content-Length"])))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    am = ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=am.serve_forever, daemon=True).start()
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, body in {"squeue": 'case "$*" in *-w*) echo 4101;; *) echo "4101|RUNNING|gpu02";; esac',
                       "scontrol": f'echo "$@" >> {tmp_path}/scontrol.log'}.items():
        (bin_ / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_ / name).chmod(0o755)
    data = lab_data()
    data["deploy"]["reboot"]["drain"] = ["scontrol", "update", "nodename={host}", "state=drain", "reason={reason}"]
    data["monitoring"]["alerts"]["page"]["migrate"] = {}
    files = render_environment(index_of(data), "lab")
    srv = "monitoring/sm01"
    script, targets = tmp_path / "drain-hook", tmp_path / "targets.json"
    script.write_text(files[f"{srv}/usr/local/lib/clusterforge/drain-hook"])
    config = json.loads(files[f"{srv}/etc/clusterforge/monitoring/drain-targets.json"])
    config["alertmanagers"] = [f"http://127.0.0.1:{am.server_address[1]}"]
    targets.write_text(json.dumps(config))
    from cf_http import free_port

    port = free_port()
    env = {"PATH": f"{bin_}:/usr/bin:/bin"}
    journal = tmp_path / "journal.jsonl"
    proc = subprocess.Popen([sys.executable, "-I", str(script), "--listen", f"127.0.0.1:{port}", "--targets",
                             str(targets), "--log", str(journal)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        body = json.dumps(_payload(("HbmTemperatureHigh", "gpu03", "firing"))).encode()
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/drain", data=body),
                                       timeout=5).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
                time.sleep(0.1)
        while not got and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        am.shutdown()
    assert (tmp_path / "scontrol.log").read_text().splitlines() == [
        "update nodename=gpu03 state=drain reason=cf-alert: level 3 HbmTemperatureHigh", "requeue 4101"]
    path, alerts = got[0]
    assert path == "/api/v2/alerts" and alerts[0]["labels"]["alertname"] == REPORT_ALERT
    assert alerts[0]["annotations"]["now"] == "4101 RUNNING on gpu02"
    events = [json.loads(line)["event"] for line in journal.read_text().splitlines()]
    assert events == ["drain", "jobs", "requeue", "migration"]
