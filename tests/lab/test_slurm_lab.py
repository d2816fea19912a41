"""The node health check through real Slurm in the lab (issue #24; docs/health.md).

A copy of the lab inventory, three nodes (sm01, gpu01, gpu02), `lab up --slurm`: Debian's munge, slurmctld
(on sm01) and slurmd (on the GPU nodes). The deploy puts cf-nodecheck and each node's expectations on the GPU
nodes; slurmd runs it every `health_check.interval_s` (30 s in the lab) as its HealthCheckProgram. Then, with
nothing run by hand:

* a cable of gpu02 degraded (`lab fault degrade`): slurmd's next check drains gpu02 through the lab
  inventory's drain hook (the guest stand-in runs `scontrol update`), the reason naming the port;
* healed: the next clean check resumes it (its own drain);
* gpu01 drained by a person (`scontrol update ... reason=maintenance`): healthy checks leave it drained.

Long (`make test-long`): the image with Slurm is built once (minutes), and each step waits on slurmd's
interval. Run with the lab lock: `flock /tmp/cf-lab.lock .venv/bin/pytest -q tests/lab/test_slurm_lab.py`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cf_lab_net import cf, lab_copy
from clusterforge.lab import ssh_command
from clusterforge.lab.proc import run
from clusterforge.rehearsal import env as labenv

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.lab, pytest.mark.long]
NODES = "sm01,gpu01,gpu02"
CABLE = "C-00003"  # gpu02/mlx5_0/1 - leaf-su01-r0/2


@pytest.fixture(scope="module")
def slurm_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with lab_copy(tmp_path_factory, ROOT / "inventories" / "lab", "cfslurm", "--slurm", "--limit", NODES) as env:
        yield env


def _ssh(env: Path, host: str, *argv: str) -> tuple[int, str]:
    state = labenv.running(env)
    assert state is not None
    res = run(ssh_command(state, host, list(argv)), timeout=90, check=False)
    return res.returncode, res.stdout + res.stderr


def _nodes(env: Path) -> dict[str, tuple[str, str]]:
    """node -> (state, reason) as slurmctld has it."""
    code, out = _ssh(env, "sm01", "sinfo", "-h", "-N", "-o", "%N|%T|%E")
    assert code == 0, out
    return {n: (s, r) for n, s, r in (line.split("|", 2) for line in out.splitlines() if line.count("|") == 2)}


def _until(env: Path, node: str, want: str, timeout: float = 150.0) -> tuple[str, str]:
    deadline = time.monotonic() + timeout
    now = _nodes(env).get(node, ("?", ""))
    # `*`: slurmctld found slurmd not responding: while a check that drains or resumes runs (scontrol calls
    # slurmctld from inside slurmd's health check), slurmd answers late, then "Node gpu02 now responding"
    while not now[0].startswith(want) or now[0].endswith("*"):
        assert time.monotonic() < deadline, f"{node} still {now} after {timeout:g} s (wanted {want})"
        time.sleep(3)
        now = _nodes(env).get(node, ("?", ""))
    return now


def test_slurmd_s_health_check_drains_a_broken_node_and_re_admits_it_healed(slurm_env: Path) -> None:
    nodes = _nodes(slurm_env)
    assert {n: s for n, (s, _) in nodes.items()} == {"gpu01": "idle", "gpu02": "idle"}, nodes
    code, out = cf("deploy", str(slurm_env), "--limit", "gpu01,gpu02", "--component", "healthcheck", "--no-diffs",
                   "--yes")
    assert code == 0, out
    code, out = _ssh(slurm_env, "gpu02", "/usr/local/lib/clusterforge/cf-nodecheck", "--dry-run")
    assert code == 0 and "gpu02: healthy" in out, out  # the lab's stand-ins answer as declared

    code, out = cf("lab", "fault", str(slurm_env), "degrade", CABLE)
    assert code == 0, out
    _, reason = _until(slurm_env, "gpu02", "drain")  # slurmd ran the check; nobody else did
    assert reason.startswith("cf-health: mlx5_0 port 1 at"), reason
    assert _nodes(slurm_env)["gpu01"][0] == "idle"

    code, out = cf("lab", "heal", str(slurm_env))
    assert code == 0, out
    assert _until(slurm_env, "gpu02", "idle")[0] == "idle"  # its own drain, resumed after a clean run


def test_a_person_s_drain_survives_healthy_checks(slurm_env: Path) -> None:
    code, out = _ssh(slurm_env, "sm01", "scontrol", "update", "nodename=gpu01", "state=drain", "reason=maintenance")
    assert code == 0, out
    code, out = _ssh(slurm_env, "gpu01", "/usr/local/lib/clusterforge/cf-nodecheck")
    assert code == 0 and "drained by someone else, left drained: maintenance" in out, out
    time.sleep(65)  # two of slurmd's own runs (30 s) on a healthy node
    state, reason = _nodes(slurm_env)["gpu01"]
    assert state.startswith("drain") and reason == "maintenance", (state, reason)
