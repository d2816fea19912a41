"""Run the acceptance plan over SSH and save each output in `--from`'s layout (docs/accept.md). An edge: it
does the I/O (OpenSSH, host keys verified, as collection does); what to run comes from accept/plan.py and the
judgement from accept/judge.py.

1. **nodes**: every GPU node's four commands, `parallel` nodes at a time (collect/ssh.py's bounded pool);
2. **links**: round by round, each test's `ib_write_bw` server started on its node (under coreutils'
   `timeout`: a server left without its client ends there), then its client once the
   server printed perftest's "Waiting for client to connect" (or `server_wait_s` passed: a server whose output
   is buffered says nothing until it ends); a client refused because its server was not listening yet
   ("Couldn't connect") is tried again, `client_tries` in all. A round's tests run at once (no port twice in a
   round, each server on its own TCP port); the next round starts when this one is done;
3. **fabric**: each group's `mpirun` on the group's first node, one group at a time (a group loads the whole
   fabric).

A host that does not answer costs only its own outputs: each missing output is named in the outcome and,
judged, is ACC-NO-DATA, never a pass. Output files are written atomically. An ssh ended by a signal saved
nothing (what it printed is cut short); interrupted (Ctrl-C, or SIGTERM under `terminate_cleanly`), the run
starts no further test: the CLI's `fsutil.fresh_directory` then removes what it saved.
"""

from __future__ import annotations

import dataclasses
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..collect.plan import Target
from ..collect.ssh import SshConfig, collect, ended_by_interrupt
from ..util.fsutil import write_atomic
from .plan import AcceptPlan, FabricTest, LinkTest

WAITING = "Waiting for client to connect"
REFUSED = "Couldn't connect to"


@dataclass(frozen=True)
class RunSettings:
    node_timeout_s: float = 3600.0
    """One node's four tests together (dcgmi diag -r 2 takes minutes, -r 3/4 much longer)."""
    link_timeout_s: float = 120.0
    """One ib_write_bw test, server and client (-D 5: seconds)."""
    fabric_timeout_s: float = 1800.0
    """One group's mpirun."""
    server_wait_s: float = 3.0
    client_tries: int = 3


@dataclass
class RunOutcome:
    written: list[str] = field(default_factory=list)
    """Output paths (under the run directory) written."""
    missing: dict[str, str] = field(default_factory=dict)
    """Output path -> why it was not written."""


def run_plan(plan: AcceptPlan, addresses: Mapping[str, str], cfg: SshConfig, out_dir: Path,
             settings: RunSettings | None = None, on_stage: Callable[[str], None] | None = None) -> RunOutcome:
    """Every planned test over SSH, its output saved under `out_dir` (nodes/, links/, nccl/)."""
    s = settings or RunSettings()
    result = RunOutcome()
    say = on_stage or (lambda _msg: None)
    stop = threading.Event()  # set when an ssh of ours was ended by an interrupt: nothing more is started
    say(f"nodes: {len(plan.nodes)} GPU node(s), {cfg.parallel} at a time")
    _nodes(plan, addresses, cfg, out_dir, s, result)
    rounds = sorted({t.round for t in plan.links})
    for r in rounds:
        tests = [t for t in plan.links if t.round == r]
        say(f"links: round {r} of {len(rounds)}, {len(tests)} ib_write_bw test(s)")
        _links(tests, addresses, cfg, out_dir, s, result, stop)
    for ft in plan.fabric:
        say(f"fabric: {ft.name}, {len(ft.nodes)} node(s)")
        _fabric(ft, addresses, cfg, out_dir, s, result, stop)
    return result


def _save(out_dir: Path, rel: str, text: str, result: RunOutcome, lock: threading.Lock | None = None) -> None:
    path = out_dir / rel
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    except OSError as exc:  # a write that failed (disk full, a file size limit) names the output, not a descriptor
        if exc.filename is None:
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    if lock is None:
        result.written.append(rel)
    else:
        with lock:
            result.written.append(rel)


def _nodes(plan: AcceptPlan, addresses: Mapping[str, str], cfg: SshConfig, out_dir: Path, s: RunSettings,
           result: RunOutcome) -> None:
    targets = [Target(t.node, addresses[t.node], {k: tuple(v) for k, v in t.commands.items()})
               for t in plan.nodes if t.node in addresses]
    node_cfg = dataclasses.replace(cfg, command_timeout_s=int(s.node_timeout_s), host_timeout_s=s.node_timeout_s)
    obs = collect(node_cfg, targets, None)
    for t in plan.nodes:
        outputs = obs.hosts.get(t.node, {})
        for name in t.commands:
            rel = f"nodes/{t.node}/{name}"
            if name in outputs:
                _save(out_dir, rel, outputs[name], result)
            elif t.node not in addresses:
                result.missing[rel] = f"{t.node} has no address"
            elif t.node in obs.unreachable:
                result.missing[rel] = f"{t.node}: {obs.unreachable[t.node]}"
            else:
                result.missing[rel] = f"{t.node}: {t.commands[name][0]} is not installed there"


def _ssh(cfg: SshConfig, address: str, argv: list[str]) -> list[str]:
    return cfg.argv(address, tuple(argv))


def _links(tests: list[LinkTest], addresses: Mapping[str, str], cfg: SshConfig, out_dir: Path, s: RunSettings,
           result: RunOutcome, stop: threading.Event) -> None:
    lock = threading.Lock()

    def one(t: LinkTest) -> None:
        rel = f"links/{t.name}"
        if stop.is_set():
            with lock:
                result.missing[rel] = "not run: the run was interrupted"
            return
        if t.server.node not in addresses or t.client.node not in addresses:
            with lock:
                result.missing[rel] = "a node of the pair has no address"
            return
        server_argv, client_argv = t.argv(addresses[t.server.node])
        # a server whose client never came would wait on its TCP port for ever (and the next round's server on
        # that port would fail to listen): coreutils' timeout ends it on the node, where killing ssh here cannot
        server_argv = ["timeout", str(int(s.link_timeout_s)), *server_argv]
        why = _one_link(cfg, addresses[t.server.node], server_argv, addresses[t.client.node], client_argv, s,
                        lambda text: _save(out_dir, rel, text, result, lock), stop)
        if why is not None:
            with lock:
                result.missing[rel] = why

    pool = ThreadPoolExecutor(max_workers=max(1, cfg.parallel))
    try:
        list(pool.map(one, tests))
    finally:  # interrupted (Ctrl-C, SIGTERM): the tests not started yet are not started
        pool.shutdown(wait=True, cancel_futures=True)


def _one_link(cfg: SshConfig, server_addr: str, server_argv: list[str], client_addr: str, client_argv: list[str],
              s: RunSettings, save: Callable[[str], None], stop: threading.Event) -> str | None:
    """One ib_write_bw test; None when the client's output was saved, else why not."""
    deadline = time.monotonic() + s.link_timeout_s
    server = subprocess.Popen(_ssh(cfg, server_addr, server_argv), stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
    try:
        _wait_for_banner(server, min(s.server_wait_s, s.link_timeout_s))
        if server.poll() is not None and server.returncode == 255:
            return f"{server_addr}: ssh failed starting the ib_write_bw server"
        for attempt in range(max(1, s.client_tries)):
            left = deadline - time.monotonic()
            if left <= 0:
                return f"timed out after {s.link_timeout_s:g} s"
            try:
                proc = subprocess.run(_ssh(cfg, client_addr, client_argv), capture_output=True, text=True,
                                      timeout=left, check=False)
            except subprocess.TimeoutExpired:
                return f"the client timed out after {s.link_timeout_s:g} s"
            if proc.returncode < 0:  # ssh ended by a signal: what it printed is cut short, no test's output
                if ended_by_interrupt(proc.returncode):
                    stop.set()
                return f"{client_addr}: the client's ssh was ended by signal {-proc.returncode}"
            if proc.returncode == 255:
                return f"{client_addr}: ssh failed ({(proc.stderr.strip().splitlines() or ['?'])[-1]})"
            if proc.returncode in (126, 127):
                return f"{client_addr}: ib_write_bw is not installed there"
            text = proc.stdout if proc.returncode == 0 else proc.stdout + proc.stderr
            if proc.returncode != 0 and REFUSED in text and attempt + 1 < s.client_tries:
                time.sleep(1.0)
                continue
            save(text)
            return None
        return "the client never reached its server"
    finally:
        if server.poll() is None:
            try:
                server.wait(timeout=max(1.0, min(10.0, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def _wait_for_banner(server: subprocess.Popen[str], wait_s: float) -> None:
    """Until the server printed perftest's banner, ended, or `wait_s` passed (its output may be buffered)."""
    found = threading.Event()

    def read() -> None:
        assert server.stdout is not None
        for line in server.stdout:
            if WAITING in line:
                found.set()
        found.set()

    threading.Thread(target=read, daemon=True).start()
    found.wait(wait_s)


def _fabric(ft: FabricTest, addresses: Mapping[str, str], cfg: SshConfig, out_dir: Path, s: RunSettings,
            result: RunOutcome, stop: threading.Event) -> None:
    rel = f"nccl/{ft.name}"
    launcher = ft.nodes[0]
    if stop.is_set():
        result.missing[rel] = "not run: the run was interrupted"
        return
    if launcher not in addresses:
        result.missing[rel] = f"{launcher} (the launcher) has no address"
        return
    try:
        proc = subprocess.run(_ssh(cfg, addresses[launcher], ft.argv()), capture_output=True, text=True,
                              timeout=s.fabric_timeout_s, check=False)
    except subprocess.TimeoutExpired:
        result.missing[rel] = f"mpirun on {launcher} timed out after {s.fabric_timeout_s:g} s"
        return
    if proc.returncode < 0:
        if ended_by_interrupt(proc.returncode):
            stop.set()
        result.missing[rel] = f"{launcher}: ssh was ended by signal {-proc.returncode}"
    elif proc.returncode == 255:
        result.missing[rel] = f"{launcher}: ssh failed"
    elif proc.returncode in (126, 127):
        result.missing[rel] = f"{launcher}: mpirun is not installed there"
    else:
        _save(out_dir, rel, proc.stdout, result)
