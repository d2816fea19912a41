"""The scale lab: N plain SSH targets on this machine, as many as its memory holds (docs/scale.md).

    with ScaleLab(512) as lab:          # refuses (ScaleRefused, nothing started) a size that would leave < 6 GiB
        lab.targets                     # [Target("t0000", "198.19.224.10", root=/var/tmp/cf-scale/root/t0000), ...]
        lab.key, lab.known_hosts, lab.user

Each target is a network namespace `cfsc<i>` with one veth on a bridge and one sshd started with a minimal
configuration (listening on the namespace's port 22, one host key, key-only logins of a uid-0 alias with
/bin/sh as shell). The namespaces share this machine's file system, processes and packages: a target is an
SSH endpoint with an address and a directory of its own (`root`), not a GPU node (no HCA, no GPU, no systemd,
no apt of its own). What a deploy writes there goes under the target's root.

Address plan: 198.19.224.0/20 by default (inside the benchmark range 198.18.0.0/15, no inventory's range;
refused while an interface of this machine overlaps it) as four /22
segments of at most 1,000 targets each, one bridge per segment (a Linux bridge holds at most 1,024 ports),
gateway .1 of each segment on its bridge, targets from .10: up to 4,000 targets.

Before anything starts, the cost of a target is measured (a few targets started, and one SSH session opened to
each, MemAvailable read before and after, then stopped again), and a size that would leave less than 6 GiB free
(with what the caller says its controller will use) is refused with ScaleRefused. Everything started is
recorded in a state file as it starts (namespaces, bridges, sshd pids with their start times) and stopped on
exit, on an exception, on SIGTERM / SIGHUP / SIGINT; what a killed run left is stopped by the next start.
Standard library only (the lab's floor), and root. The pure parts (the address plan, the bring-up lines, the memory
arithmetic) are lab/hosts/scale_plan.py's.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from clusterforge.lab.hosts.scale_plan import (
    BRIDGE_PREFIX,
    FREE_FLOOR_MB,
    MIN_TARGET_MB,
    NS_PREFIX,
    PROBE_TARGETS,
    SUBNET,
    TIMEOUT_S,
    USER,
    VETH_PREFIX,
    WORK,
    ScaleAddresses,
    ScaleError,
    address_plan,
    bring_up_lines,
    check_room,
    missing_neighbours,
    overlapping,
    target_name,
)
from clusterforge.lab.proc import ProcessRecord, is_alive, start_time_of

_NS_RE = re.compile(rf"^{NS_PREFIX}\d+$")
_BRIDGE_RE = re.compile(rf"^{BRIDGE_PREFIX}\d+$")
_VETH_RE = re.compile(rf"^{VETH_PREFIX}\d+$")

def networks_in_use() -> list[str]:
    out = _sh(["ip", "-o", "-4", "addr", "show"], check=False).stdout
    return [f.split()[3] for f in out.splitlines() if len(f.split()) > 3]


def mem_available_mb(meminfo: Path = Path("/proc/meminfo")) -> float:
    for line in meminfo.read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    raise ScaleError("scale lab: /proc/meminfo has no MemAvailable")


# -- the lab ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    name: str
    address: str
    root: Path


REQUIRED = {"/usr/sbin/sshd": "openssh-server", "ssh": "openssh-client", "ssh-keygen": "openssh-client",
            "ip": "iproute2", "nsenter": "util-linux"}


def missing(required: dict[str, str] = REQUIRED, root_for: str = "network namespaces") -> list[str]:
    """What the scale lab (or a bench with its own `required` tools -> Debian packages) needs and this machine
    lacks: root, and the packages of the tools not found."""
    gaps = [] if os.geteuid() == 0 else [f"root ({root_for})"]
    gaps += sorted({pkg for tool, pkg in required.items() if shutil.which(tool) is None})
    return gaps


def _sh(argv: list[str], *, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    if check and proc.returncode != 0:
        raise ScaleError(f"scale lab: {' '.join(argv[:6])} failed ({proc.returncode}): {proc.stderr.strip()[:500]}")
    return proc


def _ip_batch(lines: list[str], *, check: bool = True) -> None:
    if lines:
        # -force: go on past a failed line (cleanup), the exit status still says
        _sh(["ip", "-force", "-batch", "-"], check=check, stdin="\n".join(lines) + "\n")


def our_namespaces() -> list[str]:
    out = _sh(["ip", "netns", "list"], check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.split() and _NS_RE.match(line.split()[0])]


def _links(kind: str, pattern: re.Pattern[str]) -> list[str]:
    out = _sh(["ip", "-o", "link", "show", "type", kind], check=False).stdout
    names = [line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if line.count(":") >= 2]
    return [n for n in names if pattern.match(n)]


def our_bridges() -> list[str]:
    return _links("bridge", _BRIDGE_RE)


def our_veths() -> list[str]:
    return _links("veth", _VETH_RE)


def stop_all(records: list[ProcessRecord], timeout_s: float = 5.0) -> int:
    """SIGTERM to every recorded process still alive (pid and start time checked), a wait, SIGKILL to the rest;
    all at once, not one after another. Returns how many were alive."""
    alive = [r for r in records if is_alive(r)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for r in alive:
            if is_alive(r):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(r.pid, sig)
        deadline = time.monotonic() + timeout_s
        while any(is_alive(r) for r in alive) and time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                while os.waitpid(-1, os.WNOHANG)[0] > 0:
                    pass
            time.sleep(0.05)
    return len(alive)


def cleanup(work: Path = WORK) -> dict[str, int]:
    """Stop whatever a scale lab left: its recorded sshds (by pid and start time), every process inside its
    namespaces, the namespaces, the bridges, the per-host roots. Idempotent; returns what it removed."""
    state = work / "state.json"
    procs = 0
    if state.exists():
        with contextlib.suppress(ValueError, OSError):
            procs += stop_all([ProcessRecord.from_json(rec) for rec in json.loads(state.read_text()).get("procs", [])])
    spaces = our_namespaces()
    for ns in spaces:
        # sessions outlive their sshd (ControlPersist masters, a deploy's shells): every process in our namespaces
        for pid in _sh(["ip", "netns", "pids", ns], check=False).stdout.split():
            with contextlib.suppress(ProcessLookupError, ValueError, PermissionError):
                os.kill(int(pid), signal.SIGKILL)
                procs += 1
    # the root side of each veth first: deleting it takes its peer at once (a namespace's links go later)
    _ip_batch([f"link del {v}" for v in our_veths()], check=False)
    _ip_batch([f"netns del {ns}" for ns in spaces], check=False)
    bridges = our_bridges()
    _ip_batch([f"link del {b}" for b in bridges], check=False)
    deadline = time.monotonic() + 30
    while (our_veths() or our_namespaces()) and time.monotonic() < deadline:
        time.sleep(0.2)
    shutil.rmtree(work / "root", ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        state.unlink()
    return {"processes": procs, "namespaces": len(spaces), "bridges": len(bridges)}


@dataclass
class ScaleLab:
    """N SSH targets; a context manager (start on enter, everything stopped on exit or a signal)."""

    n: int
    work: Path = WORK
    user: str = USER
    subnet: str = SUBNET
    controller_mb_per_host: float = 0.0
    controller_mb: float = 0.0
    floor_mb: float = FREE_FLOOR_MB
    target_mb: float | None = None
    """The measured cost of one target (idle sshd + one session), MiB; measured at start unless given."""
    targets: list[Target] = field(default_factory=list)
    started_s: float = 0.0
    available_mb: float = 0.0
    _procs: list[ProcessRecord] = field(default_factory=list)
    _popens: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _old_handlers: dict[int, Any] = field(default_factory=dict)

    @property
    def key(self) -> Path:
        return self.work / "keys" / "client"

    @property
    def known_hosts(self) -> Path:
        return self.work / "keys" / "known_hosts"

    def planned_targets(self, n: int | None = None) -> list[Target]:
        """The first `n` (default: N) targets of the address plan (names, addresses, roots): what a started
        lab's `targets` are, for a process that works on a lab another one started (the bench's pyinfra
        worker), or what the memory probe starts."""
        n = self.n if n is None else n
        addresses = address_plan(n, self.subnet).addresses
        return [Target(target_name(i), addresses[i], self.work / "root" / target_name(i)) for i in range(n)]

    # -- lifecycle

    def __enter__(self) -> ScaleLab:
        self._trap_signals()
        try:
            self.start()
        except BaseException:
            self.stop()
            self._restore_signals()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop()
        finally:
            self._restore_signals()

    def _trap_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return

        def bye(signum: int, frame: FrameType | None) -> None:
            raise SystemExit(128 + signum)  # unwinds through stop()

        for sig in (signal.SIGTERM, signal.SIGHUP):
            self._old_handlers[sig] = signal.signal(sig, bye)

    def _restore_signals(self) -> None:
        for sig, old in self._old_handlers.items():
            signal.signal(sig, old)
        self._old_handlers.clear()

    def start(self) -> None:
        if gaps := missing():
            raise ScaleError(f"scale lab: missing {', '.join(gaps)} (run `sh scripts/lab-deps.sh --netns` as root)")
        plan = address_plan(self.n, self.subnet)  # refuses a size the address plan cannot hold, first
        cleanup(self.work)  # a killed run's leftovers
        if clash := overlapping(self.subnet, networks_in_use()):
            raise ScaleError(f"scale lab: {self.subnet} overlaps {', '.join(clash)} on this machine; nothing was "
                             "started (another subnet: ScaleLab(subnet=...))")
        self.available_mb = mem_available_mb()
        if self.available_mb < self.floor_mb:
            check_room(self.n, self.available_mb, MIN_TARGET_MB, self.controller_mb_per_host, self.controller_mb,
                       self.floor_mb)
        self._prepare()
        if self.target_mb is None:
            self.target_mb = self.measure_target_mb()
            self.available_mb = mem_available_mb()
        check_room(self.n, self.available_mb, self.target_mb, self.controller_mb_per_host, self.controller_mb,
                   self.floor_mb)
        t0 = time.monotonic()
        self.targets = self._bring_up(plan, self.n)
        self.started_s = time.monotonic() - t0

    def stop(self) -> None:
        for p in self._popens:
            with contextlib.suppress(ProcessLookupError):
                p.kill()
        for p in self._popens:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=5)
        self._popens.clear()
        stop_all(self._procs)
        self._procs.clear()
        cleanup(self.work)
        self.targets = []

    # -- the cost of a target

    def measure_target_mb(self, k: int = PROBE_TARGETS) -> float:
        """Start k targets, open an SSH session to each, read MemAvailable before and after; stop them.
        The session's client counts too (an overestimate: a deploy's paramiko has no client process)."""
        k = max(1, min(k, self.n))
        plan = address_plan(k, self.subnet)
        before = _settled_available()
        try:
            targets = self._bring_up(plan, k)
            sessions = [subprocess.Popen([*self.ssh_argv(t.address), "sleep 60"], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for t in targets]
            self._popens += sessions
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not all(_has_session(f"{NS_PREFIX}{i}") for i in range(k)):
                time.sleep(0.2)
            after = _settled_available()
        finally:
            self.stop()
        return max(MIN_TARGET_MB, (before - after) / k)

    def ssh_argv(self, address: str) -> list[str]:
        return ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o",
                f"UserKnownHostsFile={self.known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
                "-o", "ConnectTimeout=10", "-o", "LogLevel=ERROR", "-i", str(self.key), "-o", "IdentitiesOnly=yes",
                f"{self.user}@{address}", "--"]

    # -- bringing targets up

    def _prepare(self) -> None:
        """Keys, the login user, the shared sshd configuration, the known_hosts of every address of the plan."""
        keys = self.work / "keys"
        keys.mkdir(parents=True, exist_ok=True)
        for k in ("client", "host"):
            if not (keys / k).exists():
                _sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / k)])
        auth = self.work / "authorized_keys"
        shutil.copyfile(keys / "client.pub", auth)
        os.chmod(auth, 0o600)
        if _sh(["id", self.user], check=False).returncode != 0:
            (self.work / "home").mkdir(exist_ok=True)
            _sh(["useradd", "-o", "-u", "0", "-g", "0", "-M", "-d", str(self.work / "home"), "-s", "/bin/sh",
                 self.user])
        _sh(["usermod", "-p", "*", self.user])  # key-only, but not locked (sshd refuses locked accounts)
        (self.work / "sshd_config").write_text(
            f"HostKey {keys / 'host'}\nPidFile none\nAllowUsers {self.user}\nAuthorizedKeysFile {auth}\n"
            "PermitRootLogin yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
            "UseDNS no\nStrictModes no\nPrintMotd no\nPrintLastLog no\nMaxSessions 100\nMaxStartups 200\n"
            "ClientAliveInterval 30\n")
        host_pub = (keys / "host.pub").read_text().split()[:2]
        plan = address_plan(self.n, self.subnet)
        self.known_hosts.write_text("".join(f"{a} {host_pub[0]} {host_pub[1]}\n" for a in plan.addresses))

    def _record(self) -> None:
        state = {"procs": [r.to_json() for r in self._procs]}
        tmp = self.work / "state.json.tmp"
        tmp.write_text(json.dumps(state))
        tmp.replace(self.work / "state.json")

    def _bring_up(self, plan: ScaleAddresses, n: int) -> list[Target]:
        self._record()
        lines = bring_up_lines(plan, n)
        _ip_batch(lines)
        for i in range(n):
            seg = plan.segment_of(i)
            _sh(["ip", "-n", f"{NS_PREFIX}{i}", "-batch", "-"],
                stdin=f"addr add {plan.addresses[i]}/{seg.network.prefixlen} dev eth0\nlink set eth0 up\n"
                      f"link set lo up\nroute add default via {seg.gateway}\n")
        conf = self.work / "sshd_config"
        for i in range(n):
            proc = subprocess.Popen(["nsenter", f"--net=/run/netns/{NS_PREFIX}{i}", "/usr/sbin/sshd", "-D", "-f",
                                     str(conf)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
            start = None
            for _ in range(100):
                if (start := start_time_of(proc.pid)) is not None:
                    break
                time.sleep(0.01)
            self._procs.append(ProcessRecord(proc.pid, start or 0, f"sshd {NS_PREFIX}{i}"))
            if i % 64 == 63:
                self._record()
        self._record()
        targets = self.planned_targets(n)  # the probe's k, not N: it waited on N-k targets never started
        lost = missing_neighbours(plan.addresses[:n], _sh(["ip", "-j", "neigh", "show", "nud", "permanent"]).stdout)
        if lost:
            raise ScaleError(f"scale lab: {len(lost)} of {n} permanent neighbour entries are gone after the bring-up "
                             f"(first {lost[0]}): past gc_thresh3 those targets would be unreachable")
        self._wait_listening(targets)
        return targets

    def _wait_listening(self, targets: list[Target], timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        waiting = list(targets)
        while waiting:
            still = []
            for i, t in enumerate(waiting):
                left = deadline - time.monotonic()
                if left <= 0:  # the deadline holds within a pass too (a pass over dead targets is 2 s each)
                    still += waiting[i:]
                    break
                try:
                    with socket.create_connection((t.address, 22), timeout=min(2.0, left)):
                        pass
                except OSError:
                    still.append(t)
            waiting = still
            if waiting and time.monotonic() > deadline:
                first = waiting[0]
                raise ScaleError(f"scale lab: {len(waiting)} target(s) not listening after {timeout_s:g} s "
                                 f"(first {first.name} {first.address}; `sshd -t -f {self.work}/sshd_config`)")
            if waiting:
                time.sleep(0.2)


def _has_session(ns: str) -> bool:
    """More than the listening sshd in the namespace: a session's processes."""
    return len(_sh(["ip", "netns", "pids", ns], check=False).stdout.split()) > 1


def _settled_available(samples: int = 3) -> float:
    vals = []
    for _ in range(samples):
        time.sleep(0.3)
        vals.append(mem_available_mb())
    return sorted(vals)[len(vals) // 2]


@contextlib.contextmanager
def scale_lab(n: int, **kw: Any) -> Iterator[ScaleLab]:
    with ScaleLab(n, **kw) as lab:
        yield lab
