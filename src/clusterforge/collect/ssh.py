"""Run collection commands over SSH (OpenSSH client), in parallel with a bound.

Host keys are verified against the environment's known_hosts (StrictHostKeyChecking=yes);
every call has a connect timeout and keep-alives so a black-holed host fails instead of
hanging. Commands are argv lists quoted with shlex for the remote shell.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .plan import Target
from .store import Observations

INTERRUPTS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
"""The signals that end an ssh when the run itself is interrupted (Ctrl-C reaches the whole process group): after
one, no further host or test is started (the main thread, which Python's own handler interrupts, may learn of
it only when the pool's work is done)."""


def ended_by_interrupt(returncode: int) -> bool:
    return returncode < 0 and -returncode in INTERRUPTS


@dataclass(frozen=True)
class SshConfig:
    known_hosts: Path
    user: str = "root"
    port: int = 22
    identity: Path | None = None
    connect_timeout_s: int = 5
    connect_retries: int = 2
    """OpenSSH's ConnectionAttempts is this plus one (its tries are a second apart)."""
    command_timeout_s: int = 60
    parallel: int = 16
    host_timeout_s: float = 180.0
    """All of one host's commands together: past it the host is unreachable (a finding), the others go on."""
    multiplex: bool = True
    """One SSH connection per host (a ControlMaster under a private directory, closed when the host is done):
    one key exchange per host instead of one per command (docs/scale.md: the CPU of a collection is its
    handshakes)."""
    control_dir: Path | None = None
    """Where the masters' sockets go (collect() sets a private temporary directory)."""

    def argv(self, address: str, command: tuple[str, ...]) -> list[str]:
        argv = [
            "ssh",
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            f"UserKnownHostsFile={self.known_hosts}",
            "-o",
            "GlobalKnownHostsFile=/dev/null",
            "-o",
            f"ConnectTimeout={self.connect_timeout_s}",
            "-o",
            f"ConnectionAttempts={self.connect_retries + 1}",
            "-o",
            "ServerAliveInterval=5",
            "-o",
            "ServerAliveCountMax=2",
            "-o",
            "LogLevel=ERROR",
            "-p",
            str(self.port),
        ]
        if self.identity is not None:
            argv += ["-i", str(self.identity), "-o", "IdentitiesOnly=yes"]
        if self.control_dir is not None:
            argv += ["-o", "ControlMaster=auto", "-o", f"ControlPath={self.control_dir}/%C", "-o", "ControlPersist=60"]
        return [*argv, f"{self.user}@{address}", "--", shlex.join(command)]

    def close_argv(self, address: str) -> list[str]:
        """Ends the host's master connection (multiplexed runs)."""
        return ["ssh", "-o", f"ControlPath={self.control_dir}/%C", "-p", str(self.port), "-O", "exit",
                f"{self.user}@{address}"]


@dataclass(frozen=True)
class Outcome:
    host: str
    outputs: dict[str, str]
    unreachable: str | None


def _run_target(cfg: SshConfig, target: Target, stop: threading.Event | None = None) -> Outcome:
    try:
        return _run_commands(cfg, target, stop or threading.Event())
    finally:
        if cfg.control_dir is not None:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                subprocess.run(cfg.close_argv(target.address), capture_output=True, timeout=10, check=False)


def _run_commands(cfg: SshConfig, target: Target, stop: threading.Event) -> Outcome:
    outputs: dict[str, str] = {}
    deadline = time.monotonic() + cfg.host_timeout_s
    for stem, command in target.commands.items():
        if stop.is_set():
            return Outcome(target.host, outputs, f"{stem}: not run, the collection was interrupted")
        left = deadline - time.monotonic()
        if left <= 0:
            return Outcome(target.host, outputs, f"{stem}: the host's {cfg.host_timeout_s:g} s were spent")
        timeout = min(cfg.command_timeout_s, left)
        try:
            proc = subprocess.run(
                cfg.argv(target.address, command),
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return Outcome(target.host, outputs, f"{stem}: timed out after {timeout:g} s")
        if proc.returncode < 0:  # ssh ended by a signal: its output is cut short
            if ended_by_interrupt(proc.returncode):
                stop.set()
            return Outcome(target.host, outputs, f"{stem}: ssh was ended by signal {-proc.returncode}")
        if proc.returncode == 255:  # ssh itself failed: connection, auth or host key
            reason = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "ssh failed"
            return Outcome(target.host, outputs, reason)
        if proc.returncode in (126, 127):
            continue  # the tool is not installed there: nothing to validate for it
        outputs[stem] = proc.stdout
    return Outcome(target.host, outputs, None)


def collect(cfg: SshConfig, hosts: list[Target], fabric: Target | None,
            on_done: Callable[[str], None] | None = None) -> Observations:
    """Every target's outputs, `cfg.parallel` at a time; `on_done(host)` as each finishes (from its worker
    thread: a progress bar)."""
    obs = Observations()
    jobs = list(hosts) + ([fabric] if fabric else [])
    stop = threading.Event()

    def run(job: tuple[int, Target]) -> Outcome:
        i, t = job
        job_cfg = cfg
        if cfg.control_dir is not None:
            # a master of its own per job: the fabric's target is often a host's address too, and two jobs
            # sharing one master would each end it under the other (the other's next command: ssh failed)
            own = cfg.control_dir / str(i)
            own.mkdir(mode=0o700, exist_ok=True)
            job_cfg = dataclasses.replace(cfg, control_dir=own)
        outcome = _run_target(job_cfg, t, stop)
        if on_done is not None:
            on_done(t.host)
        return outcome

    with contextlib.ExitStack() as stack:
        if cfg.multiplex and cfg.control_dir is None:
            cp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cf-ssh-")))
            cfg = dataclasses.replace(cfg, control_dir=cp)
        pool = ThreadPoolExecutor(max_workers=max(1, cfg.parallel))
        # interrupted (Ctrl-C, SIGTERM): the hosts not started yet are not started (a pool's own exit runs them all)
        stack.callback(pool.shutdown, wait=True, cancel_futures=True)
        outcomes = list(pool.map(run, enumerate(jobs)))
    for target, outcome in zip(jobs, outcomes, strict=True):
        if target is fabric:
            obs.fabric.update(outcome.outputs)
            if outcome.unreachable:
                obs.unreachable.setdefault(outcome.host, outcome.unreachable)
            continue
        if outcome.unreachable:
            obs.unreachable[outcome.host] = outcome.unreachable
        else:
            obs.hosts[outcome.host] = outcome.outputs
    return obs
