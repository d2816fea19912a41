"""Level 3 moves the jobs, on real Slurm in the lab (issue #35; docs/monitoring.md, "Level 3"): the scenario,
shared by tests/lab/test_job_migration_lab.py and `make bench` (bench/monitoring_bench.py).

A copy of the lab inventory with `alerts.page.migrate: {how: requeue}` (`shape`), three nodes (sm01, gpu01, gpu02)
on a systemd lab with real Slurm (`lab up --slurm --systemd --limit NODES`: Debian's slurmctld on sm01, slurmd on
the GPU nodes), every component deployed by pyinfra (the real VictoriaMetrics, vmalert, Alertmanager on sm01, and
the drain hook, which runs squeue/scontrol there against the real slurmctld; cf-nodecheck under slurmd). Then:

* two batch jobs on gpu01 (gpu02 held by a person's drain while they are placed): one that can requeue and
  writes `SLURM_RESTART_COUNT` to its output, and one submitted `--no-requeue`;
* `lab fault hot gpu01 0` (its HBM at 91 °C; the 3 hours before it backfilled, as the monitoring e2e test does):
  HbmTemperatureHigh fires, the drain hook drains gpu01 with a `cf-alert:` reason, requeues the first job, which
  starts on gpu02 with restart count 1, and reports the second by id, which keeps running on gpu01;
* the drain hook's journal and `clusterforge alerts` (JobsMoved, and the cause alert's `jobs_moved`) say the same;
* nothing is lost: each run's output file is whole (its line; on the first node, Slurm's note of the requeue);
* the health check (cf-nodecheck, run by slurmd every 30 s) leaves the cf-alert drain in place.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from cf_lab_monitoring import alerts, deploy_nodes, wait_alertmanager
from cf_lab_net import cf, own_network
from cf_monitoring_e2e import _first_live, backfill, wait_for
from clusterforge.lab import ssh_command
from clusterforge.lab.proc import run
from clusterforge.rehearsal import env as labenv

NODES = "sm01,gpu01,gpu02"
UP_ARGS = ("--slurm", "--systemd", "--no-start-sm", "--limit", NODES)
HOT, SPARE = "gpu01", "gpu02"
JOURNAL = "/var/lib/clusterforge-drain-hook/drained.jsonl"
LIMIT_S = 420.0
"""Fault (history backfilled) to the requeued job running on gpu02: vmalert's 1 min evaluation, Alertmanager's
group_wait (30 s), the hook's drain and requeue, Slurm's scheduling of the requeued job."""
JOB = "#!/bin/sh\necho start restart=${SLURM_RESTART_COUNT:-0} host=$(hostname)\nsleep 1800\necho end\n"


def shape(env: Path) -> None:
    """The lab copy `env` on its own network, its level 3 moving jobs."""
    own_network(env)
    mon = env / "monitoring.yaml"
    text = mon.read_text()
    anchor = "      drain: true"
    assert anchor in text
    mon.write_text(text.replace(anchor, "      migrate: {how: requeue}\n" + anchor, 1))


def _ssh(env: Path, host: str, *argv: str, check: bool = True) -> str:
    state = labenv.running(env)
    assert state is not None
    res = run(ssh_command(state, host, list(argv)), timeout=90, check=False)
    assert res.returncode == 0 or not check, f"{host}: {' '.join(argv)}: {res.stdout}{res.stderr}"
    return res.stdout


def _jobs(env: Path) -> dict[str, tuple[str, str, str]]:
    """job id -> (state, nodes, name) as slurmctld has them."""
    out = _ssh(env, "sm01", "squeue", "-h", "-o", "%i|%T|%N|%j")
    rows = [line.split("|") for line in out.splitlines() if line.count("|") == 3]
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def _submit(env: Path, name: str, *opts: str) -> str:
    _ssh(env, "sm01", "sh", "-c", f"printf '%s' '{JOB}' > /root/{name}.sh")
    out = _ssh(env, "sm01", "sbatch", "--parsable", "-J", name, "-n", "1", f"--output=/var/tmp/{name}-%j.out",
               *opts, f"/root/{name}.sh")
    return out.strip().split(";")[0]


def _node(env: Path, node: str) -> tuple[str, str]:
    out = _ssh(env, "sm01", "sinfo", "-h", "-N", "-n", node, "-o", "%T|%E")
    state, _, reason = out.strip().partition("|")
    return state, reason


def run_scenario(env: Path, tmp_path: Path) -> dict[str, float]:
    """The scenario on the running lab of `env` (shaped by `shape`), every step checked; the seconds of the
    steps measured."""
    seconds: dict[str, float] = {}
    state = labenv.running(env)
    assert state is not None
    # both jobs onto gpu01: gpu02 held by a person while they are placed
    _ssh(env, "sm01", "scontrol", "update", f"nodename={SPARE}", "state=drain", "reason=placing the test jobs")
    moving = _submit(env, "moving", "--requeue")
    staying = _submit(env, "staying", "--no-requeue")
    wait_for("both jobs running on gpu01", lambda: all(
        _jobs(env).get(j, ("",))[:2] == ("RUNNING", HOT) for j in (moving, staying)), 120)
    _ssh(env, "sm01", "scontrol", "update", f"nodename={SPARE}", "state=resume")

    t_fault = time.time()
    code, out = cf("lab", "fault", str(env), "hot", HOT, "0")
    assert code == 0, out
    t = time.monotonic()
    deploy_nodes(env, NODES.split(","), tmp_path / "plan.json")  # every component: monitoring, the health check
    seconds["deploy (pyinfra, 3 hosts)"] = time.monotonic() - t
    wait_alertmanager(env)
    vm = f"http://{state.hosts['sm01'].address}:8428"
    hbm = wait_for("the live HBM temperature of gpu01", lambda: _first_live(
        vm, f'DCGM_FI_DEV_MEMORY_TEMP{{host="{HOT}",gpu="0"}}', t_fault), 180)
    first = int(hbm["timestamps"][0])
    stamps = [first - 30_000 - k * 60_000 for k in range(200, 0, -1)]
    backfill(vm, hbm["metric"], [91.0] * len(stamps), stamps)
    t_ready = time.monotonic()

    def moved_and_running() -> bool:
        jobs = _jobs(env)
        return jobs.get(moving, ("",))[:2] == ("RUNNING", SPARE)

    wait_for("the requeued job running on gpu02", moved_and_running, LIMIT_S, every_s=3)
    seconds["fault (3 h of heat stored) -> the requeued job running on another node"] = time.monotonic() - t_ready

    node_state, reason = _node(env, HOT)
    assert node_state.startswith("drain") and reason.startswith("cf-alert: level 3 HbmTemperatureHigh"), (
        node_state, reason)
    assert _jobs(env)[staying][:2] == ("RUNNING", HOT)  # refused, left running: never cancelled
    out = _ssh(env, SPARE, "sh", "-c", f"cat /var/tmp/moving-{moving}.out")
    assert re.fullmatch(rf"start restart=1 host={SPARE}\n", out), out  # the whole line, restart count 1

    journal = [json.loads(line) for line in _ssh(env, "sm01", "cat", JOURNAL).splitlines()]
    migration = [e for e in journal if e["event"] == "migration" and e["host"] == HOT]
    assert len(migration) == 1, journal
    assert migration[0]["moved"] == [moving], migration
    assert [r["job"] for r in migration[0]["refused"]] == [staying], migration
    assert "disabled" in migration[0]["refused"][0]["said"].lower(), migration

    def reported() -> dict[str, Any]:
        listed = {(a["alertname"], a["host"]): a for a in alerts(env)}
        report = listed.get(("JobsMoved", HOT))
        return report if report and report["jobs_now"].get(moving, "").startswith("RUNNING") else {}

    report = wait_for("JobsMoved with where the job runs now", reported, 120, every_s=5)
    assert (report["jobs_moved"], report["jobs_refused"]) == ([moving], [staying])  # what the journal says
    assert report["jobs_now"][moving] == f"RUNNING on {SPARE}" and report["cause"] == "HbmTemperatureHigh"
    heat = {(a["alertname"], a["host"]): a for a in alerts(env)}[("HbmTemperatureHigh", HOT)]
    assert heat["jobs_moved"] == [moving] and heat["jobs_refused"] == [staying]

    time.sleep(65)  # two of slurmd's health checks on gpu01: a cf-alert drain is never theirs to resume
    node_state, reason = _node(env, HOT)
    assert node_state.startswith("drain") and reason.startswith("cf-alert:"), (node_state, reason)
    # the first run's output, on gpu01, is whole too: its line, then Slurm's own word on why it ended
    first_run = _ssh(env, HOT, "cat", f"/var/tmp/moving-{moving}.out").splitlines()
    assert first_run[0] == f"start restart=0 host={HOT}", first_run
    assert re.fullmatch(rf"slurmstepd-{HOT}: error: \*\*\* JOB {moving} ON {HOT} CANCELLED AT \S+ DUE TO JOB "
                        r"REQUEUE \*\*\*", first_run[1]) and len(first_run) == 2, first_run
    assert _ssh(env, HOT, "cat", f"/var/tmp/staying-{staying}.out") == f"start restart=0 host={HOT}\n"
    return seconds
