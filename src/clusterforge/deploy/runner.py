"""Run a deploy over SSH with pyinfra's API, one isolated greenlet per host.

pyinfra's own `run_ops` lets an unexpected exception of one host (paramiko's EOFError when
that host's sshd dies mid-run) escape the gevent pool and abort every host. Here each host
runs its whole deploy (connect -> facts -> changes -> apply) inside its own greenlet with
every exception caught and recorded against that host only; batches (`--batch`) get their
own `State`, so one broken batch cannot poison the next, and `--max-fail-percent` stops
starting new batches once too many hosts failed.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gevent  # type: ignore[import-untyped]
from pyinfra.api.command import StringCommand
from pyinfra.api.config import Config
from pyinfra.api.inventory import Inventory
from pyinfra.api.state import State

from .changes import (
    MASTER_WAIT_S,
    WAIT_MASTER_SCRIPT,
    Change,
    change_lines,
    component_changes,
    reboot_needed,
    starts_opensm,
)
from .component import HostPlan
from .facts import HostFacts, HostState
from .os_target import OsFound, mismatch
from .packages import headers_package
from .pkgmgr import PackageManager, manager

COMMAND_TIMEOUT_S = 900
PROBE_TIMEOUT_S = 120
KEEPALIVE_S = 5


@dataclass(frozen=True)
class SshSettings:
    user: str = "root"
    port: int = 22
    key: Path | None = None
    known_hosts: Path | None = None
    connect_timeout_s: int = 10
    channel_timeout_s: float = 30.0
    """paramiko's channel_timeout: a black-holed host fails after this instead of hanging."""
    connect_retries: int = 2
    """Connects tried again after a refused, reset or timed-out one (0.2-2 s apart): at 2,048 hosts 26
    connections were reset at connect and those hosts failed with no second try (docs/scale.md)."""


@dataclass
class HostResult:
    name: str
    status: str = "pending"
    """ok | changed | failed | unreachable | skipped | planned"""
    changes: list[Change] = field(default_factory=list)
    error: str = ""
    notes: list[str] = field(default_factory=list)
    reboot: str | None = None
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.status in ("failed", "unreachable", "skipped")


class HostFailure(Exception):
    """A host-level failure with a message fit for the summary."""


class ConnectionLost(HostFailure):
    """The host stopped answering in the middle of the deploy."""


def _host_data(plan: HostPlan, ssh: SshSettings) -> dict[str, Any]:
    data: dict[str, Any] = {
        "ssh_hostname": plan.address, "ssh_port": ssh.port, "ssh_user": ssh.user,
        "ssh_strict_host_key_checking": "yes", "ssh_allow_agent": False, "ssh_look_for_keys": False,
        "ssh_connect_retries": ssh.connect_retries,
        "ssh_connect_retry_min_delay": 0.2, "ssh_connect_retry_max_delay": 2.0,
        "ssh_paramiko_connect_kwargs": {"channel_timeout": ssh.channel_timeout_s, "timeout": ssh.connect_timeout_s,
                                        "banner_timeout": ssh.connect_timeout_s,
                                        "auth_timeout": ssh.connect_timeout_s},
    }
    if ssh.key is not None:
        data["ssh_key"] = str(ssh.key)
    if ssh.known_hosts is not None:
        data["ssh_known_hosts_file"] = str(ssh.known_hosts)
    return data


def make_state(plans: Sequence[HostPlan], ssh: SshSettings, parallel: int) -> State:
    """A fresh pyinfra State for these hosts (known_hosts re-read: pyinfra memoizes it per process)."""
    from pyinfra.connectors.sshuserclient import client

    client.get_host_keys.cache.clear()
    inventory = Inventory(  # type: ignore[no-untyped-call]
        ([(p.name, _host_data(p, ssh)) for p in plans], {}))
    config = Config(  # type: ignore[no-untyped-call]
        PARALLEL=max(1, parallel), CONNECT_TIMEOUT=ssh.connect_timeout_s, FAIL_PERCENT=100)
    return State(inventory, config)


def probe_args(plan: HostPlan) -> dict[str, Any]:
    comps = plan.components
    # what `retire` takes away is probed like a secret file (is it there: no content read), a pinned
    # package (is it held) and a service (enabled, active)
    return {
        "files": tuple(f.dest for c in comps for f in c.files if not f.secret),
        "secret_files": tuple(f.dest for c in comps for f in c.files if f.secret) + tuple(
            f for c in comps for f in c.remove),
        "packages": tuple(sorted({p.package for c in comps for p in c.pins} | {p for c in comps for p in c.packages}
                                 | {p for c in comps for p in c.unhold})),
        "processes": ("opensm",) if plan.component("opensm") else (),
        "services": tuple(s for c in comps for s in (*c.services, *c.stop)),
        "modules": tuple(m for c in comps for m in c.modules),
        "binaries": ("netplan",) if plan.component("ipoib") else (),
        "package_manager": plan.package_manager,
    }


class HostSession:
    """One host's connection: facts and commands through pyinfra, failures as HostFailure."""

    def __init__(self, state: State, name: str) -> None:
        self.host = state.inventory.get_host(name)

    def connect(self) -> None:
        self.host.connect(show_errors=False, raise_exceptions=True)
        # keepalives make a dead peer (container killed, link cut) fail the next read instead of
        # leaving a command waiting on a TCP connection that will never answer
        client = getattr(self.host.connector, "client", None)
        transport = client.get_transport() if client is not None else None
        if transport is not None:
            transport.set_keepalive(KEEPALIVE_S)

    def facts(self, plan: HostPlan) -> HostFacts:
        facts: HostFacts = self.host.get_fact(HostState, _timeout=PROBE_TIMEOUT_S, **probe_args(plan))
        return facts

    def run(self, script: str, what: str, timeout: int = COMMAND_TIMEOUT_S) -> str:
        # the script goes to `sh -s` on stdin, not as the command's one argument: a component's inline uploads
        # (the monitoring server's files, base64) pass Linux's 128 KiB limit on one argument ("Argument list
        # too long"); stdin has none
        ok, output = self.host.run_shell_command(StringCommand("sh", "-s"), _stdin=script, _timeout=timeout)
        if not ok:
            if not self.alive():
                raise ConnectionLost(f"connection lost during {what}")
            tail = "\n".join(output.stderr_lines[-5:] or output.stdout_lines[-5:])
            raise HostFailure(f"{what} failed: {tail.strip() or 'no output'}")
        return "\n".join(output.stdout_lines)

    def alive(self) -> bool:
        """Does the host still answer on this connection (a short no-op command)?"""
        try:
            ok, _ = self.host.run_shell_command(StringCommand("true"), _timeout=10)
        except Exception:
            return False
        return bool(ok)

    def close(self) -> None:
        """Disconnect, and close the SSH connection: pyinfra's SSH connector's disconnect forgets its file
        transfer channel only, so every finished host's paramiko transport stayed open, its reader waking
        ten times a second: at 1,024 hosts in one State the converged run took 62 s (15.7 s at 512)."""
        client = getattr(self.host.connector, "client", None)
        with contextlib.suppress(Exception):  # a dead connection cannot be closed cleanly; nothing to keep
            self.host.disconnect()
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()


class SmStartGate:
    """The highest-priority SM node's OpenSM starts first (and answers as MASTER) before the standbys' start.

    One event per top SM node in the batch: set once its OpenSM component is done (started and a master
    answers, nothing to start, or the host failed); a standby's OpenSM waits for it (at most twice
    MASTER_WAIT_S, then starts anyway: a subnet needs an SM more than it needs the right one). A standby whose
    top SM node is not in this batch (--limit, an earlier batch) does not wait."""

    def __init__(self, plans: Sequence[HostPlan]) -> None:
        from gevent.event import Event  # type: ignore[import-untyped]

        self._events: dict[str, Any] = {}
        for plan in plans:
            comp = plan.component("opensm")
            if comp is not None and comp.wait_master:
                self._events[plan.name] = Event()

    def before_start(self, start_after: str) -> bool:
        """Wait for `start_after`'s OpenSM; False when it did not answer in time (the caller notes it)."""
        event = self._events.get(start_after)
        return True if event is None else bool(event.wait(timeout=2 * MASTER_WAIT_S + 30))

    def done(self, name: str) -> None:
        event = self._events.get(name)
        if event is not None:
            event.set()


NO_GATE = SmStartGate(())


def apply_script(changes: Sequence[Change]) -> str:
    """One `set -e` script for a component's changes: uploads inline (base64), then commands."""
    return "\n".join(["set -e", *(line for ch in changes for line in change_lines(ch))])


def deploy_host(session: HostSession, plan: HostPlan, *, dry_run: bool, gate: SmStartGate = NO_GATE) -> HostResult:
    """Connect, read facts, compute and (unless dry) apply every component's changes; a standby SM node's
    OpenSM waits at `gate` for the highest-priority one's."""
    result = HostResult(plan.name)
    session.connect()
    facts = session.facts(plan)
    if plan.os is not None and (wrong := mismatch(plan.os, facts.os or OsFound())) is not None:
        raise HostFailure(wrong)  # before any change, dry run or not: this host is not the one declared
    if not facts.systemd and any(c.services for c in plan.components):
        result.notes.append("no systemd on this host: services are not enabled/started")
    pm = manager(plan.package_manager)
    refreshed = False  # the package lists, once per host: after the repo's files changed, else before a package
    for comp in plan.components:
        if comp.problems:
            raise HostFailure(f"{comp.name} preflight: " + "; ".join(comp.problems))
        changes = component_changes(comp, facts)
        if not changes:
            if comp.wait_master:
                gate.done(plan.name)  # running and unchanged: nothing to wait for
            continue
        result.changes += changes
        if dry_run:
            continue
        if comp.start_after and starts_opensm(changes) and not gate.before_start(comp.start_after):
            result.notes.append(f"opensm: {comp.start_after}'s OpenSM did not answer in time: started anyway")
        if any(c.kind == "package" for c in changes) and not refreshed:
            session.run(pm.refresh, f"{pm.name}: refresh the package lists")
            refreshed = True
        if comp.name == "nvidia":
            _headers_preflight(session, facts, pm, plan.family)
        if comp.name == "repo":
            session.run(apply_script(changes), f"{comp.name}: apply")
            session.run(pm.refresh, f"{pm.name}: refresh the package lists")
            refreshed = True
            continue
        session.run(apply_script(changes), f"{comp.name}: apply")
        if comp.name == "ofed" and comp.pins:
            _verify_ofed(session, comp.pins[0].version)
        if comp.wait_master:
            if starts_opensm(changes):
                said = session.run(WAIT_MASTER_SCRIPT, "opensm: wait for a master SM", MASTER_WAIT_S + 30).strip()
                result.notes += [f"opensm: {said}"] if said else []
            gate.done(plan.name)
    if not dry_run and any(c.component == "nvidia" and c.kind == "package" for c in result.changes):
        after = session.facts(plan)
        result.reboot = reboot_needed(plan.pins, after)
    result.status = ("planned" if dry_run else "changed") if result.changes else "ok"
    return result


def _headers_preflight(session: HostSession, facts: HostFacts, pm: PackageManager, family: str) -> None:
    pkg = headers_package(facts.kernel, family)
    said = session.run(pm.available(pkg), "kernel headers check").strip()
    if said == "installed":
        return
    if said in ("", "(none)"):
        raise HostFailure(f"nvidia preflight: kernel headers {pkg} for the running kernel are neither installed "
                          "nor available from the configured repositories")
    session.run(pm.install([(pkg, None)]), f"install {pkg}")


def _verify_ofed(session: HostSession, version: str) -> None:
    out = session.run("ofed_info -s", "ofed_info -s").strip()
    if version.rsplit("-", 1)[0] not in out and version not in out:
        raise HostFailure(f"ofed verify: `ofed_info -s` says {out!r}, expected {version}")


def run_batch(plans: Sequence[HostPlan], ssh: SshSettings, *, dry_run: bool, parallel: int,
              progress: Callable[[HostResult], None] | None = None,
              deploy: Callable[..., HostResult] = deploy_host) -> list[HostResult]:
    """Deploy one batch of hosts concurrently; every host's failure stays that host's."""
    state = make_state(plans, ssh, parallel)
    gate = SmStartGate(plans)

    def one(plan: HostPlan) -> HostResult:
        start = time.monotonic()
        session = HostSession(state, plan.name)
        try:
            result = deploy(session, plan, dry_run=dry_run, gate=gate)
        except ConnectionLost as exc:
            result = HostResult(plan.name, "unreachable", error=str(exc))
        except HostFailure as exc:
            result = HostResult(plan.name, "failed", error=str(exc))
        except Exception as exc:
            result = _classify(plan.name, exc)
        finally:
            gate.done(plan.name)  # failed or done: a standby waiting for this host's OpenSM goes on
            session.close()
        result.seconds = time.monotonic() - start
        if progress is not None:
            progress(result)
        return result

    greenlets = [state.pool.spawn(one, plan) for plan in plans]
    gevent.joinall(greenlets)
    return [g.value if g.successful() else HostResult(p.name, "failed", error=repr(g.exception))
            for g, p in zip(greenlets, plans, strict=True)]


def _starts_sm_first(plan: HostPlan) -> bool:
    comp = plan.component("opensm")
    return comp is not None and comp.wait_master


def _classify(name: str, exc: BaseException) -> HostResult:
    from pyinfra.api.exceptions import ConnectError

    text = f"{type(exc).__name__}: {exc}".strip()
    if isinstance(exc, ConnectError):
        return HostResult(name, "unreachable", error=f"cannot connect: {exc}")
    if isinstance(exc, (EOFError, OSError, TimeoutError)) or "SSH" in type(exc).__name__:
        return HostResult(name, "unreachable", error=f"connection lost: {text}")
    return HostResult(name, "failed", error=text)


def run_deploy(plans: Sequence[HostPlan], ssh: SshSettings, *, dry_run: bool = False, batch: int = 0,
               max_fail_percent: int = 100, parallel: int = 64,
               progress: Callable[[HostResult], None] | None = None) -> list[HostResult]:
    """Deploy every plan, `batch` hosts at a time (0: all at once); stop starting batches past the limit."""
    size = batch if batch > 0 else max(1, len(plans))
    if size < len(plans):  # the highest-priority SM node in the first batch: its OpenSM starts before the others'
        plans = sorted(plans, key=lambda p: not _starts_sm_first(p))
    results: list[HostResult] = []
    for i in range(0, len(plans), size):
        done = len(results)
        failed = sum(r.failed for r in results)
        if done and failed * 100 > max_fail_percent * done:
            results += [HostResult(p.name, "skipped", error=f"not started: {failed}/{done} hosts failed "
                                   f"(> {max_fail_percent}%)") for p in plans[i:]]
            break
        results += run_batch(plans[i:i + size], ssh, dry_run=dry_run, parallel=parallel, progress=progress)
    return results
