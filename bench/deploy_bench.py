"""Deploy benchmarks: pyinfra (our runner) vs Ansible (our roles), on the lab and on plain SSH hosts.

    from deploy_bench import run
    rows = run()                  # lab (4 containers) + 32 and 64 netns SSH hosts
    rows = run(scale=(8,), lab=False)

Each row: {"bench", "engine", "phase", "hosts", "wall_s", "cpu_s", "cpu_ms_per_host"} plus ratio rows
({"bench", "metric", "value"}). Control-node CPU is this process's children + itself (rusage).

Scale hosts are network namespaces on one bridge, each with its own sshd, sharing this machine's
file system: the workload is the probe command plus the templated files of the GPU-node components
without host-wide side effects (nccl, ofed), written under a per-host root (/var/tmp/cf-bench/<host>/).
They log in as `cfbench`, a uid-0 alias with /bin/sh as shell, so no heavy start-up files run per command.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from clusterforge.api import load_checked  # noqa: E402
from clusterforge.deploy.ansible import run_playbook  # noqa: E402
from clusterforge.deploy.component import Component, HostPlan  # noqa: E402
from clusterforge.deploy.desired import host_plans  # noqa: E402
from clusterforge.deploy.options import DeployOptions  # noqa: E402
from clusterforge.deploy.runner import SshSettings, run_deploy  # noqa: E402
from clusterforge.lab import LabSpec  # noqa: E402

ENV = ROOT / "inventories" / "lab"
WORK = Path("/var/tmp/cf-bench")
BENCH_USER = "cfbench"
TIMEOUT_S = 120


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class BenchFailed(RuntimeError):
    """A timed deploy did not do what it was timed for: its figure would be nonsense."""


def verify(bench: str, engine: str, phase: str, hosts: int, result: Any) -> None:
    """Every host reached and answered; a first run changed every host, a second run changed none."""
    if isinstance(result, tuple):  # run_playbook: (results, output)
        result = result[0]
    results = list(getattr(result, "results", result))
    what = f"{bench} {engine} {phase} on {hosts} hosts"
    if len(results) != hosts:
        raise BenchFailed(f"{what}: {len(results)} host results, expected {hosts}")
    bad = [r for r in results if r.failed]
    if bad:
        raise BenchFailed(f"{what}: {len(bad)} host(s) {bad[0].status}, e.g. {bad[0].name}: {bad[0].error[:300]}")
    if phase == "first" and (same := [r.name for r in results if r.status != "changed"]):
        raise BenchFailed(f"{what}: the first run changed nothing on {', '.join(same[:5])}")
    if phase == "second" and (changed := [r.name for r in results if r.status == "changed"]):
        raise BenchFailed(f"{what}: the second run changed {', '.join(changed[:5])} again (not idempotent)")


def _measure(bench: str, engine: str, phase: str, hosts: int, fn: Callable[[], Any]) -> dict[str, Any]:
    cpu0, t0 = _cpu(), time.monotonic()
    result = fn()
    wall, cpu = time.monotonic() - t0, _cpu() - cpu0
    verify(bench, engine, phase, hosts, result)
    return {"bench": bench, "engine": engine, "phase": phase, "hosts": hosts, "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3), "cpu_ms_per_host": round(1000 * cpu / max(1, hosts), 1)}


def _ratios(bench: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by = {(r["engine"], r["phase"], r["hosts"]): r["wall_s"] for r in rows if r["bench"] == bench}
    out = []
    for (engine, phase, hosts), wall in sorted(by.items()):
        if engine == "pyinfra" and ("ansible", phase, hosts) in by:
            out.append({"bench": bench, "metric": f"pyinfra/ansible {phase} {hosts} hosts",
                        "value": round(wall / by[("ansible", phase, hosts)], 4)})
        if phase == "second" and (engine, "first", hosts) in by:
            out.append({"bench": bench, "metric": f"{engine} second/first {hosts} hosts",
                        "value": round(wall / by[(engine, "first", hosts)], 4)})
    return out


# -- scale: plain SSH hosts in network namespaces --------------------------------------------------


#: Components whose changes touch only files under the per-host root. The others notify handlers that
#: would act on this machine itself (the namespaces share its PIDs and services): opensm's SIGHUP,
#: apt-get update, systemd reloads.
SAFE_COMPONENTS = ("nccl", "ofed")


def _files_only(plan: HostPlan, name: str, address: str) -> HostPlan:
    comps = tuple(Component(c.name, c.files) for c in plan.components if c.files and c.name in SAFE_COMPONENTS)
    return dataclasses.replace(plan, name=name, address=address, components=comps)


def scale_plans(n: int, subnet: str = "198.18.200") -> list[HostPlan]:
    index = load_checked(ENV).index
    src = [p for p in host_plans(index, DeployOptions("lab")).values() if p.component("nccl")]
    plans = []
    for i in range(n):
        name = f"h{i:03d}"
        base = src[i % len(src)]
        rooted = host_plans(index, DeployOptions("lab", root=str(WORK / "root" / name)))[base.name]
        plans.append(_files_only(rooted, name, f"{subnet}.{10 + i}"))
    return plans


def _sh(argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=check)


def _ensure_user() -> None:
    if _sh(["id", BENCH_USER], check=False).returncode != 0:
        _sh(["useradd", "-o", "-u", "0", "-g", "0", "-M", "-d", str(WORK / "home"), "-s", "/bin/sh", BENCH_USER])
    _sh(["usermod", "-p", "*", BENCH_USER])  # key-only, but not locked (sshd refuses locked accounts)


REQUIRED = {"/usr/sbin/sshd": "openssh-server", "ssh": "openssh-client", "ssh-keygen": "openssh-client",
            "ip": "iproute2", "podman": "podman"}


def missing() -> list[str]:
    """What this bench needs and this machine lacks: root, and the Debian packages of REQUIRED."""
    from clusterforge.lab.hosts.scale import missing as missing_of

    return missing_of(REQUIRED, "network namespaces, podman")


def start_hosts(n: int, subnet: str = "198.18.200") -> tuple[SshSettings, list[subprocess.Popen[bytes]]]:
    """n namespaces `cfb<i>` on bridge `cfbench0` (gateway .1), one sshd each; returns ssh settings + sshds."""
    if gaps := missing():
        raise BenchFailed(f"deploy bench: missing {', '.join(gaps)} (run `sh scripts/lab-deps.sh --netns` as root)")
    stop_hosts(n)
    _ensure_user()
    keys = WORK / "keys"
    keys.mkdir(parents=True, exist_ok=True)
    home = WORK / "home" / ".ssh"
    home.mkdir(parents=True, exist_ok=True)
    for k in ("client", "host"):
        if not (keys / k).exists():
            _sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / k)])
    shutil.copyfile(keys / "client.pub", home / "authorized_keys")
    os.chmod(home / "authorized_keys", 0o600)
    host_pub = (keys / "host.pub").read_text().split()[:2]
    known = keys / "known_hosts"
    known.write_text("".join(f"{subnet}.{10 + i} {host_pub[0]} {host_pub[1]}\n" for i in range(n)))
    _sh(["ip", "link", "add", "cfbench0", "type", "bridge"])
    _sh(["ip", "addr", "add", f"{subnet}.1/24", "dev", "cfbench0"])
    _sh(["ip", "link", "set", "cfbench0", "up"])
    sshds = []
    for i in range(n):
        ns, veth = f"cfb{i}", f"cfbv{i}"
        _sh(["ip", "netns", "add", ns])
        _sh(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns])
        _sh(["ip", "link", "set", veth, "master", "cfbench0", "up"])
        for cmd in (["ip", "addr", "add", f"{subnet}.{10 + i}/24", "dev", "eth0"], ["ip", "link", "set", "eth0", "up"],
                    ["ip", "link", "set", "lo", "up"]):
            _sh(["ip", "netns", "exec", ns, *cmd])
        conf = WORK / f"sshd-{i}.conf"
        conf.write_text(f"ListenAddress {subnet}.{10 + i}\nHostKey {keys / 'host'}\nPidFile {WORK}/sshd-{i}.pid\n"
                        f"AllowUsers {BENCH_USER}\nAuthorizedKeysFile {home / 'authorized_keys'}\n"
                        "PermitRootLogin yes\nPasswordAuthentication no\nUsePAM no\n"
                        "StrictModes no\nMaxSessions 100\nMaxStartups 200\n")
        sshds.append(subprocess.Popen(["ip", "netns", "exec", ns, "/usr/sbin/sshd", "-D", "-e", "-f", str(conf)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    time.sleep(1.0)
    dead = [i for i, proc in enumerate(sshds) if proc.poll() is not None]
    if dead:
        raise BenchFailed(f"sshd exited at once in {len(dead)} namespace(s) "
                          f"(cfb{dead[0]}: see {WORK}/sshd-{dead[0]}.conf)")
    ssh = SshSettings(user=BENCH_USER, key=keys / "client", known_hosts=known, connect_timeout_s=10)
    return ssh, sshds


def stop_hosts(n: int, sshds: list[subprocess.Popen[bytes]] | None = None) -> None:
    for proc in sshds or []:
        proc.terminate()
        proc.wait(timeout=10)
    for i in range(n):
        # sessions outlive their sshd (Ansible's ControlPersist masters): end every process in the namespace
        pids = _sh(["ip", "netns", "pids", f"cfb{i}"], check=False).stdout.split()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        _sh(["ip", "netns", "del", f"cfb{i}"], check=False)
        _sh(["ip", "link", "del", f"cfbv{i}"], check=False)  # gone with the netns unless a process kept it
    _sh(["ip", "link", "del", "cfbench0"], check=False)


def _scale_fn(engine: str, plans: list[HostPlan], ssh: SshSettings, dry: bool) -> Callable[[], object]:
    if engine == "pyinfra":
        return lambda: run_deploy(plans, ssh, dry_run=dry, parallel=len(plans))
    return lambda: run_playbook(plans, ssh, dry_run=dry, forks=32)  # bounded (never one per host)


def scale_rows(counts: tuple[int, ...] = (32, 64), ansible: bool = True) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for n in counts:
        plans = scale_plans(n)
        sshds: list[subprocess.Popen[bytes]] = []
        try:
            ssh, sshds = start_hosts(n)
            for engine in ("pyinfra", "ansible") if ansible else ("pyinfra",):
                shutil.rmtree(WORK / "root", ignore_errors=True)
                for phase, dry in (("dry", True), ("first", False), ("second", False)):
                    rows.append(_measure("deploy-scale", engine, phase, n, _scale_fn(engine, plans, ssh, dry)))
                    print(rows[-1], file=sys.stderr, flush=True)
        finally:
            stop_hosts(n, sshds)
    return rows + _ratios("deploy-scale", rows)


# -- lab: the real components on the lab's containers ----------------------------------------------


def bench_lab_spec(name: str, cidr: str, work: Path, nodes: tuple[str, ...], env: Path = ENV) -> LabSpec:
    """A podman lab of NODES of the lab inventory (subnet CIDR, an SM), its ibsim fabric rendered under WORK."""
    from clusterforge.rehearsal.env import lab_spec
    from clusterforge.render import render_environment

    index = load_checked(env).index
    work.mkdir(parents=True, exist_ok=True)
    netfile = work / "ibsim.net"
    netfile.write_text(render_environment(index, "lab")["fabric/ibsim.net"])
    return lab_spec(index, name=name, cidr=cidr, state_dir=work / "lab", netfile=netfile, nodes=nodes,
                    start_sm=True)


def lab_rows(nodes: tuple[str, ...] = ("gpu01", "gpu02", "sm01", "lus01"),
             cidr: str = "198.19.250.0/24") -> list[dict[str, Any]]:
    """pyinfra then Ansible, each on fresh lab containers: dry run, first run, second (no-change) run."""
    from clusterforge.deploy.ansible_api import deploy_ansible
    from clusterforge.deploy.api import DeployRequest, deploy
    from clusterforge.lab import down, up
    from clusterforge.rehearsal.stage import LabStage

    spec = bench_lab_spec("cfbench", cidr, WORK, nodes)
    rows: list[dict[str, Any]] = []
    try:
        for engine in ("pyinfra", "ansible"):
            down(spec.state_dir)
            up(spec, mode="podman")
            for phase, dry in (("dry", True), ("first", False), ("second", False)):
                req = DeployRequest(dry_run=dry, stage=LabStage(spec.state_dir))
                if engine == "pyinfra":
                    def fn(req: DeployRequest = req) -> object:
                        return deploy(ENV, req)
                else:
                    def fn(req: DeployRequest = req) -> object:
                        return deploy_ansible(ENV, req)
                rows.append(_measure("deploy-lab", engine, phase, len(nodes), fn))
    finally:
        down(spec.state_dir)
    return rows + _ratios("deploy-lab", rows)


#: The deploy per OS family: a node of each (inventories/lab-os), the GPU node's components without monitoring.
FAMILY_NODES = {"gpu01": "debian12", "gpu07": "ubuntu2204", "gpu08": "rocky9"}
FAMILY_COMPONENTS = ("repo", "base", "ofed", "nvidia", "nccl", "lustre")


def shaped_env(work: Path) -> Path:
    """A copy of inventories/lab-os, the lab with the FAMILY_NODES' releases declared (docs/os.md)."""
    from clusterforge.api import load_checked

    env = work / "lab-families"
    shutil.rmtree(env, ignore_errors=True)
    shutil.copytree(ENV.parent / "lab-os", env)  # its links followed: a copy of the files
    hardware = load_checked(env).index.hardware
    if {n: hardware[n].os for n in FAMILY_NODES} != FAMILY_NODES:
        raise SystemExit(f"{ENV.parent / 'lab-os'}: not the releases the bench measures ({FAMILY_NODES})")
    return env


def family_rows(cidr: str = "198.19.251.0/24") -> list[dict[str, Any]]:
    """The same GPU node's components deployed on a Debian, an Ubuntu-shaped and a Rocky-9-shaped lab host at once,
    pyinfra then Ansible, each on fresh containers: each host's own time in pyinfra's run (one greenlet per host,
    started together), and each engine's whole run; first and second (no-change) run."""
    from clusterforge.deploy.ansible_api import deploy_ansible
    from clusterforge.deploy.api import DeployOutcome, DeployRequest, deploy
    from clusterforge.lab import down, up
    from clusterforge.rehearsal.stage import LabStage

    work = WORK / "families"
    env = shaped_env(work)
    nodes = tuple(FAMILY_NODES)
    spec = bench_lab_spec("cfbenchos", cidr, work, nodes, env)
    rows: list[dict[str, Any]] = []
    try:
        for engine in ("pyinfra", "ansible"):
            down(spec.state_dir)
            up(spec, mode="podman")
            for phase in ("first", "second"):
                req = DeployRequest(stage=LabStage(spec.state_dir), components=FAMILY_COMPONENTS)
                outcome: list[DeployOutcome] = []

                def fn(req: DeployRequest = req, engine: str = engine,
                       outcome: list[DeployOutcome] = outcome) -> object:
                    outcome.append((deploy if engine == "pyinfra" else deploy_ansible)(env, req))
                    return outcome[-1]
                rows.append(_measure("deploy-family", engine, phase, len(nodes), fn))
                if engine == "pyinfra":
                    rows += [{"bench": "deploy-family-host", "engine": engine, "phase": phase, "host": r.name,
                              "os": FAMILY_NODES[r.name], "host_s": round(r.seconds, 3)}
                             for r in outcome[-1].results]
    finally:
        down(spec.state_dir)
    return rows + _ratios("deploy-family", rows)


def run(scale: tuple[int, ...] = (32, 64), ansible: bool = True, lab: bool = True) -> list[dict[str, Any]]:
    """Rows for bench/run.py: lab (containers, real components), per OS family, and scale (netns SSH hosts)."""
    return (lab_rows() + family_rows() if lab else []) + scale_rows(scale, ansible=ansible)


if __name__ == "__main__":
    import json

    args = [a for a in sys.argv[1:] if a != "--no-lab"]
    counts = tuple(int(a) for a in args) or (32, 64)
    for row in run(counts, lab="--no-lab" not in sys.argv):
        print(json.dumps(row))
