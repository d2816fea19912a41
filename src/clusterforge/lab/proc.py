"""Running external commands and tracking detached daemons.

Every external call goes through ``run``: argument lists only (never a shell),
always a timeout, the whole process group killed when it expires.  Daemons
(ibsim, OpenSM on the host) are identified by pid *and* the kernel start time
from /proc, so a recycled pid is never signalled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from clusterforge.lab.errors import CommandError, LabError

# Popen objects of daemons started by this process, so that stopping them
# also reaps them (no zombies while a test session is still running).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


@dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    check: bool = True,
    input_text: str | None = None,
) -> Result:
    """Run ``argv`` (a list, no shell) with a hard timeout.

    The child gets its own session; on timeout the whole group is killed, so
    helpers it spawned (ssh, podman conmon clients, ...) do not linger.
    """
    if isinstance(argv, str):  # pragma: no cover - defensive
        raise TypeError("argv must be a sequence of arguments, not a string")
    args = [str(a) for a in argv]
    proc = subprocess.Popen(
        args,
        stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env) if env is not None else None,
        cwd=cwd,
        start_new_session=True,
        text=True,
    )
    try:
        out, err = proc.communicate(input=input_text, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        _kill_group(proc.pid)
        out, err = proc.communicate()
        raise CommandError(
            args, None, out or "", err or "", f"timed out after {timeout:g}s"
        ) from exc
    result = Result(tuple(args), proc.returncode, out or "", err or "")
    if check and proc.returncode != 0:
        raise CommandError(args, proc.returncode, result.stdout, result.stderr,
                           f"exit status {proc.returncode}")
    return result


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


@dataclass(frozen=True)
class ProcessRecord:
    """A detached daemon: pid plus its /proc start time (clock ticks since boot)."""

    pid: int
    start_time: int
    name: str

    def to_json(self) -> dict[str, object]:
        return {"pid": self.pid, "start_time": self.start_time, "name": self.name}

    @staticmethod
    def from_json(data: Mapping[str, object]) -> ProcessRecord:
        pid, start, name = data["pid"], data["start_time"], data["name"]
        if not isinstance(pid, int) or not isinstance(start, int) or not isinstance(name, str):
            raise ValueError(f"bad process record {data!r}")
        return ProcessRecord(pid, start, name)


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # comm may contain spaces and parentheses: split after the last ')'.
    rparen = raw.rfind(")")
    return raw[rparen + 2 :].split()


def start_time_of(pid: int) -> int | None:
    fields = _stat_fields(pid)
    if fields is None:
        return None
    return int(fields[19])  # field 22 overall: starttime


def is_alive(rec: ProcessRecord) -> bool:
    """True if the recorded process still runs (zombies count as dead)."""
    fields = _stat_fields(rec.pid)
    if fields is None:
        return False
    state, start = fields[0], int(fields[19])
    return start == rec.start_time and state not in ("Z", "X")


def spawn_daemon(
    argv: Sequence[str],
    *,
    name: str,
    env: Mapping[str, str],
    cwd: Path,
    stdin: int,
    log: Path,
) -> ProcessRecord:
    """Start a long-running process detached in its own session."""
    args = [str(a) for a in argv]
    with open(log, "ab", buffering=0) as logf:
        proc = subprocess.Popen(
            args,
            stdin=stdin,
            stdout=logf,
            stderr=subprocess.STDOUT,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
            close_fds=True,
        )
    _CHILDREN[proc.pid] = proc
    start = None
    for _ in range(100):
        start = start_time_of(proc.pid)
        if start is not None:
            break
        time.sleep(0.01)
    if start is None:
        proc.wait(timeout=5)
        raise CommandError(args, proc.returncode, "", log.read_text(errors="replace"),
                           "exited immediately")
    return ProcessRecord(proc.pid, start, name)


def stop_process(rec: ProcessRecord, *, timeout: float = 5.0) -> None:
    """SIGTERM, wait, then SIGKILL; a no-op if the process is already gone.

    Idempotent and safe against pid reuse (start time is checked before every
    signal).  OpenSM ignores SIGTERM while its simulator is gone, hence the
    SIGKILL fallback.
    """
    if is_alive(rec):
        _signal(rec, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while is_alive(rec) and time.monotonic() < deadline:
            _reap(rec.pid)
            time.sleep(0.05)
        if is_alive(rec):
            _signal(rec, signal.SIGKILL)
            deadline = time.monotonic() + timeout
            while is_alive(rec) and time.monotonic() < deadline:
                _reap(rec.pid)
                time.sleep(0.05)
    _reap(rec.pid, block=True)
    if is_alive(rec):
        raise CommandError([rec.name], None, "", "", f"pid {rec.pid} survived SIGKILL")


def _signal(rec: ProcessRecord, sig: signal.Signals) -> None:
    if not is_alive(rec):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(rec.pid, sig)


def _reap(pid: int, block: bool = False) -> None:
    proc = _CHILDREN.get(pid)
    if proc is None:
        return
    try:
        if block:
            proc.wait(timeout=5)
        elif proc.poll() is None:
            return
    except subprocess.TimeoutExpired:
        return
    _CHILDREN.pop(pid, None)


def wait_for_log(rec: ProcessRecord, log: Path, marker: str, what: str, timeout: float, poll: float = 0.1) -> None:
    """Wait until a daemon's log contains `marker`; stop it and raise LabError (with the log's
    tail) when it exits first or the timeout passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if marker in text:
            return
        if not is_alive(rec):
            stop_process(rec)
            raise LabError(f"{what} exited while starting:\n{tail(text)}")
        time.sleep(poll)
    stop_process(rec)
    raise LabError(f"{what}: no {marker!r} within {timeout:g}s:\n{tail(log.read_text(errors='replace'))}")


def tail(text: str, n: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-n:])
