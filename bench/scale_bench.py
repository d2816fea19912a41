"""The scale bench (issue #26): both deploy engines and host collection on N SSH targets of the scale lab.

    from scale_bench import run
    rows = run((128, 256))          # each N: the lab up, pyinfra then Ansible (first, converged), collection
    .venv/bin/python bench/scale_bench.py 128 256 [--forks 16,32] [--strategy linear,free] [--ansible-max N]
                                        [--ansible-timeout S]
                                        [--no-ansible] [--no-collect] [--ansible-converged-only]

For each N that fits (clusterforge.lab.hosts.scale refuses, before starting anything, a size that would leave under
6 GiB free; the bench then says so and stops at the largest that fitted), on the same targets in the same run:

- pyinfra (clusterforge.deploy.runner.run_deploy, parallel: deploy.parallel's default, 64) and Ansible
  (run_playbook, forks bounded by
  memory, pipelining, ControlPersist; each forks / strategy asked for), each a first deploy onto empty
  per-target roots and a converged re-run that must change nothing. Every run is checked (every host reached,
  the first changed each one, the re-run none) or the bench fails: no figure for a run that did not work.
- host collection (clusterforge.collect.ssh.collect: a GPU node's commands of the lab inventory, bounded
  concurrency, per-host timeout) from the N targets plus 2 addresses nobody answers (they must come back as
  unreachable, the others collected).

Each row: wall seconds, controller CPU seconds (this process and its children, rusage), the controller's peak
memory above its start (PSS of this process, its descendants and the SSH clients of the run: Ansible's
ControlPersist masters leave the process tree) per host, and the lowest MemAvailable seen during the run.
"""

from __future__ import annotations

import sys

WORKER = "--pyinfra-worker"
if __name__ == "__main__" and sys.argv[1:2] == [WORKER]:
    # the pyinfra runs are `clusterforge deploy` as the product runs it: a process whose sockets, locks and
    # threads gevent patched first thing (cli/entry.py); collection and Ansible stay in the unpatched parent
    from gevent import monkey  # type: ignore[import-untyped]

    monkey.patch_all()

import contextlib  # noqa: E402
import dataclasses  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from types import SimpleNamespace  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from clusterforge.api import load_checked  # noqa: E402
from clusterforge.collect.plan import Target as CollectTarget  # noqa: E402
from clusterforge.collect.plan import default_targets  # noqa: E402
from clusterforge.collect.ssh import SshConfig, collect  # noqa: E402
from clusterforge.deploy.ansible import FORK_MB, bounded_forks, run_playbook  # noqa: E402
from clusterforge.deploy.component import HostPlan  # noqa: E402
from clusterforge.deploy.desired import host_plans  # noqa: E402
from clusterforge.deploy.options import DeployOptions  # noqa: E402
from clusterforge.deploy.runner import SshSettings, run_deploy  # noqa: E402
from clusterforge.lab.hosts.scale import ScaleLab, mem_available_mb  # noqa: E402
from clusterforge.lab.hosts.scale_plan import ScaleRefused, address_plan  # noqa: E402
from clusterforge.model.inventory import DeploySettings  # noqa: E402
from deploy_bench import ENV, BenchFailed, _files_only, verify  # noqa: E402

COUNTS = (128, 256, 512, 1024)
"""make bench's sizes (each stops at the largest the memory holds); Ansible runs to ANSIBLE_MAX only."""
PYINFRA_MB_PER_HOST = 2.5  # the controller's share per host the lab reserves for pyinfra (measured: 1.9-2.4)
PLACEHOLDER = "@@cf-scale-host@@"
#: Ansible runs up to this many hosts: measured at 1.5 controller CPU-seconds a host a run (32 hosts: 68 s), so
#: 1,024 hosts would take about 40 minutes a run on a 2-core controller (docs/scale.md).
ANSIBLE_MAX = 256
ANSIBLE_TIMEOUT_S = [3600]
"""One ansible-playbook run's limit (`--ansible-timeout S`: Ansible at 1,024 hosts takes about an hour)."""
#: Hosts at once: the model's deploy.parallel default, for pyinfra and collection alike.
PARALLEL = DeploySettings().parallel
#: pyinfra's hosts per State (`deploy --batch`). The runner held 1,024 hosts once three faults were gone: the
#: process was not gevent-patched (every connect and channel read blocked all hosts), a finished host's
#: paramiko transport was never closed (each woke ten times a second: 62 s for 1,024 converged hosts in one
#: State), and the scale lab lost neighbour entries past ~830 targets (docs/scale.md).
BATCH = 512


# -- measuring ----------------------------------------------------------------------------------------


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _controller_pids(marker: str) -> set[int]:
    """This process, its descendants, and any process whose command line names `marker` (the lab's directory:
    every SSH client of the run names its known_hosts there, Ansible's ControlPersist masters their socket)."""
    parent: dict[int, int] = {}
    tagged = set()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
            parent[int(d)] = int(stat[stat.rfind(")") + 2:].split()[1])
            if marker and marker.encode() in Path(f"/proc/{d}/cmdline").read_bytes():
                tagged.add(int(d))
        except (OSError, ValueError):
            continue
    me = os.getpid()
    out = {me}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parent.items():
            if ppid in out and pid not in out:
                out.add(pid)
                grew = True
    return out | tagged


class Sampler:
    """Peak PSS of the controller (MiB above its level at start) and lowest MemAvailable, every `every` s."""

    def __init__(self, marker: str, every: float = 0.5) -> None:
        self.marker, self.every = marker, every
        self.base = self._pss()
        self.peak = 0.0
        self.low = mem_available_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _pss(self) -> float:
        return sum(_pss_kb(p) for p in _controller_pids(self.marker)) / 1024

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self.peak = max(self.peak, self._pss() - self.base)
            self.low = min(self.low, mem_available_mb())

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.low = min(self.low, mem_available_mb())


def _kill_ssh_masters(marker: str) -> None:
    """Ansible's ControlPersist masters of this run (they outlive ansible-playbook by 60 s): each run starts cold."""
    for pid in _controller_pids(marker) - {os.getpid()}:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ssh: "):
                os.kill(pid, signal.SIGTERM)


def measure(bench: str, engine: str, phase: str, n: int, fn: Callable[[], Any], marker: str,
            check: bool = True, **extra: Any) -> dict[str, Any]:
    cpu0, t0 = _cpu(), time.monotonic()
    with Sampler(marker) as s:
        result = fn()
    wall, cpu = time.monotonic() - t0, _cpu() - cpu0
    if check:
        verify(bench, engine, phase, n, result)
    row = {"bench": bench, "engine": engine, "phase": phase, "hosts": n, **extra, "wall_s": round(wall, 2),
           "cpu_s": round(cpu, 1), "ctl_peak_mb": round(s.peak, 1), "ctl_mb_per_host": round(s.peak / n, 2),
           "min_free_mb": round(s.low)}
    print(row, file=sys.stderr, flush=True)
    return row


# -- the workload --------------------------------------------------------------------------------------


def scale_plans(lab: ScaleLab) -> list[HostPlan]:
    """The deploy bench's files-only GPU-node workload (nccl, ofed) on each target, under its own root."""
    index = load_checked(ENV).index
    bases = [p for p in host_plans(index, DeployOptions("lab")).values() if p.component("nccl")]
    rooted = host_plans(index, DeployOptions("lab", root=str(lab.work / "root" / PLACEHOLDER)))
    plans = []
    for i, t in enumerate(lab.targets):
        base = _files_only(rooted[bases[i % len(bases)].name], t.name, t.address)
        comps = tuple(dataclasses.replace(c, files=tuple(_moved(f, t.name) for f in c.files))
                      for c in base.components)
        plans.append(dataclasses.replace(base, components=comps))
    return plans


def _ssh(lab: ScaleLab) -> SshSettings:
    """How pyinfra and Ansible reach the targets (the lab's user, key and known_hosts)."""
    return SshSettings(user=lab.user, key=lab.key, known_hosts=lab.known_hosts, connect_timeout_s=30,
                       channel_timeout_s=120)


def pyinfra_in_worker(lab: ScaleLab, parallel: int, batch: int, timeout_s: float = 1800) -> list[SimpleNamespace]:
    """One pyinfra deploy of the lab's targets in a process of its own, gevent-patched as `clusterforge deploy`
    is (bench/scale_bench.py --pyinfra-worker); each host's name, status and error back as JSON."""
    argv = [sys.executable, str(Path(__file__).resolve()), WORKER, str(lab.work), str(lab.n), lab.subnet, lab.user,
            str(parallel), str(batch)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    if proc.returncode != 0:
        raise BenchFailed(f"pyinfra worker on {lab.n} hosts: exit {proc.returncode}: {proc.stderr[-2000:]}")
    return [SimpleNamespace(**r) for r in json.loads(proc.stdout.splitlines()[-1])]


def _pyinfra_worker(argv: list[str]) -> None:
    work, n, subnet, user, parallel, batch = Path(argv[0]), int(argv[1]), argv[2], argv[3], int(argv[4]), int(argv[5])
    lab = ScaleLab(n, work=work, subnet=subnet, user=user)
    lab.targets = lab.planned_targets()
    ssh = _ssh(lab)
    result = run_deploy(scale_plans(lab), ssh, parallel=parallel, batch=batch)
    print(json.dumps([{"name": r.name, "status": r.status, "error": r.error, "failed": r.failed}
                      for r in getattr(result, "results", result)]))


def _moved(f: Any, name: str) -> Any:
    return dataclasses.replace(f, dest=f.dest.replace(PLACEHOLDER, name))


def collect_targets(lab: ScaleLab, dead: int = 2) -> tuple[list[CollectTarget], set[str]]:
    """A GPU node's collection commands on every target, plus `dead` addresses of the plan nobody answers."""
    index = load_checked(ENV).index
    hosts, _ = default_targets(index, {n.name: "0.0.0.0" for n in index.inv.nodes})
    cmds = next(t.commands for t in hosts if "nvidia-smi-topo" in t.commands)
    spare = address_plan(lab.n + dead, lab.subnet).addresses[lab.n:]
    targets = [CollectTarget(t.name, t.address, cmds) for t in lab.targets]
    missing = {f"dead{i}" for i in range(dead)}
    targets += [CollectTarget(f"dead{i}", a, cmds) for i, a in enumerate(spare)]
    return targets, missing


# -- the runs ------------------------------------------------------------------------------------------


def scale_rows(counts: tuple[int, ...] = COUNTS, forks: tuple[int, ...] = (32,),
               strategies: tuple[str, ...] = ("linear",), ansible: bool = True,
               ansible_max: int = ANSIBLE_MAX, collect_too: bool = True,
               ansible_converged_only: bool = False) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for n in counts:
        with_ansible = ansible and n <= ansible_max
        if ansible and not with_ansible:
            rows.append({"bench": "deploy-scale", "engine": "ansible", "phase": "not run", "hosts": n,
                         "note": f"past --ansible-max {ansible_max}: about 1.5 CPU-s a host a run on this controller"})
        ansible_mb = max(forks) * FORK_MB if with_ansible else 0
        lab = ScaleLab(n, controller_mb_per_host=PYINFRA_MB_PER_HOST, controller_mb=ansible_mb)
        try:
            lab.__enter__()
        except ScaleRefused as exc:
            rows.append({"bench": "scale", "engine": "-", "phase": "refused", "hosts": n, "note": str(exc)})
            print(f"scale bench: stops before {n} targets: {exc}", file=sys.stderr, flush=True)
            break
        try:
            rows.append({"bench": "scale-lab", "engine": "-", "phase": "up", "hosts": n,
                         "wall_s": round(lab.started_s, 2), "target_mb": round(lab.target_mb or 0, 2),
                         "min_free_mb": round(mem_available_mb())})
            print(rows[-1], file=sys.stderr, flush=True)
            rows += _one_size(lab, forks, strategies, with_ansible, collect_too, ansible_converged_only)
        finally:
            lab.__exit__(None, None, None)
    return rows + ratios(rows)


def _one_size(lab: ScaleLab, forks: tuple[int, ...], strategies: tuple[str, ...],
              ansible: bool, collect_too: bool = True, converged_only: bool = False) -> list[dict[str, Any]]:
    """pyinfra (first, converged), then Ansible at each forks/strategy (first onto empty roots, converged; or,
    `converged_only`, only its converged re-run on the roots pyinfra deployed: it must change nothing there
    either, which also shows both engines write the same state), then collection."""
    n, marker = lab.n, str(lab.work)
    # Ansible's ControlPersist masters under the lab's directory: their titles ('ssh: DIR/cp/... [mux]') name it
    os.environ["ANSIBLE_SSH_CONTROL_PATH_DIR"] = str(lab.work / "cp")
    ssh = _ssh(lab)
    plans = scale_plans(lab) if ansible else []  # pyinfra builds its own in its worker
    rows = []
    shutil.rmtree(lab.work / "root", ignore_errors=True)
    par = min(n, PARALLEL)
    for phase in ("first", "second"):
        rows.append(measure("deploy-scale", "pyinfra", phase, n, lambda: pyinfra_in_worker(lab, par, BATCH), marker,
                            parallel=par, batch=min(n, BATCH)))
    for f in forks if ansible else ():
        for strategy in strategies:
            if not converged_only:
                shutil.rmtree(lab.work / "root", ignore_errors=True)
            used = bounded_forks(f, n)
            for phase in ("second",) if converged_only else ("first", "second"):
                _kill_ssh_masters(marker)
                rows.append(measure("deploy-scale", "ansible", phase, n,
                                    lambda f=f, strategy=strategy: run_playbook(plans, ssh, dry_run=False, forks=f,
                                                                               strategy=strategy,
                                                                               timeout_s=ANSIBLE_TIMEOUT_S[0]),
                                    marker, parallel=used, strategy=strategy,
                                    **({"on": "pyinfra's deploy"} if converged_only else {})))
            _kill_ssh_masters(marker)
    targets, dead = collect_targets(lab)
    for par in (PARALLEL,) if collect_too else ():
        cfg = SshConfig(known_hosts=lab.known_hosts, user=lab.user, identity=lab.key, connect_timeout_s=5,
                        command_timeout_s=60, host_timeout_s=120, parallel=par)
        out: dict[str, Any] = {}

        def run(cfg: SshConfig = cfg, out: dict[str, Any] = out) -> None:
            out["obs"] = collect(cfg, targets, None)

        row = measure("collect-scale", "ssh", "collect", n, run, marker, check=False, parallel=par)
        obs = out["obs"]
        if set(obs.unreachable) != dead or len(obs.hosts) != n:
            raise BenchFailed(f"collect on {n} targets: {len(obs.hosts)} collected, unreachable "
                              f"{sorted(obs.unreachable)[:5]} (expected the {len(dead)} dead addresses only)")
        row["unreachable"] = len(obs.unreachable)
        rows.append(row)
    return rows


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """pyinfra / best Ansible at each N and phase; each engine's growth from one N to the next."""
    out: list[dict[str, Any]] = []
    dep = [r for r in rows if r["bench"] == "deploy-scale"]
    for phase in ("first", "second"):
        for n in sorted({r["hosts"] for r in dep}):
            py = [r["wall_s"] for r in dep if r["engine"] == "pyinfra" and r["phase"] == phase and r["hosts"] == n]
            an = [r for r in dep if r["engine"] == "ansible" and r["phase"] == phase and r["hosts"] == n]
            if py and an:
                best = min(an, key=lambda r: r["wall_s"])
                out.append({"bench": "scale-ratio", "metric": f"pyinfra/ansible {phase} {n} hosts",
                            "value": round(py[0] / best["wall_s"], 3),
                            "note": f"Ansible's best: forks {best['parallel']}, {best['strategy']}"})
    for engine in ("pyinfra", "ansible", "ssh"):
        for phase in ("first", "second", "collect"):
            pts = sorted((r["hosts"], r["wall_s"]) for r in rows if r.get("engine") == engine
                         and r.get("phase") == phase and r["bench"] in ("deploy-scale", "collect-scale"))
            best: dict[int, float] = {}
            for h, w in pts:
                best[h] = min(w, best.get(h, w))
            ns = sorted(best)
            for a, b in itertools.pairwise(ns):
                out.append({"bench": "scale-growth", "metric": f"{engine} {phase} {a}->{b} hosts",
                            "value": round(best[b] / best[a], 2), "note": f"hosts x{b / a:g}"})
    return out


def run(counts: tuple[int, ...] = COUNTS, forks: tuple[int, ...] = (32,),
        strategies: tuple[str, ...] = ("linear",), ansible_max: int = ANSIBLE_MAX) -> list[dict[str, Any]]:
    """Rows for bench/run.py's `scale` bench."""
    return scale_rows(counts, forks, strategies, ansible_max=ansible_max)


if __name__ == "__main__" and sys.argv[1:2] == [WORKER]:
    _pyinfra_worker(sys.argv[2:])
elif __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="The scale lab: pyinfra, Ansible and SSH collection at N hosts, "
                                             "each beside its peer in the same run (JSON rows on stdout).")
    ap.add_argument("counts", nargs="*", type=int, default=list(COUNTS), help="host counts (default: %(default)s)")
    ap.add_argument("--forks", default="32", help="Ansible forks to try, comma-separated (default: 32)")
    ap.add_argument("--strategy", default="linear", help="Ansible strategies to try, comma-separated")
    ap.add_argument("--ansible-max", type=int, default=ANSIBLE_MAX, help="no Ansible above this many hosts")
    ap.add_argument("--ansible-timeout", type=int, default=ANSIBLE_TIMEOUT_S[0], help="seconds an Ansible run may take")
    ap.add_argument("--ansible-converged-only", action="store_true", help="Ansible's converged re-run only")
    ap.add_argument("--no-ansible", action="store_true", help="pyinfra (and collection) only")
    ap.add_argument("--no-collect", action="store_true", help="no SSH collection rows")
    ns = ap.parse_args(sys.argv[1:])
    counts = tuple(ns.counts)
    forks = tuple(int(x) for x in ns.forks.split(","))
    strategies = tuple(ns.strategy.split(","))
    amax, ansible, collect_too, converged_only = ns.ansible_max, not ns.no_ansible, not ns.no_collect, \
        ns.ansible_converged_only
    ANSIBLE_TIMEOUT_S[0] = ns.ansible_timeout
    for row in scale_rows(counts, forks, strategies, ansible=ansible, ansible_max=amax, collect_too=collect_too,
                          ansible_converged_only=converged_only):
        print(json.dumps(row))
