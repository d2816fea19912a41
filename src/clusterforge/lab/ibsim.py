"""The InfiniBand fabric simulator (ibsim) process and its console.

Two ways to reach a simulator:

* ``LocalEndpoint`` - unix sockets in the abstract namespace named after
  ``IBSIM_SOCKNAME``; clients must run on the same host (fabric-only use).
* ``RemoteEndpoint`` - ``ibsim -r``: UDP on ``port`` (control) and
  ``port+1 .. port+10`` (one per client slot).  ibsim always binds 0.0.0.0,
  so the lab runs it inside a network namespace of its own whose only
  interface sits on the lab bridge; every client (containers AND host-side
  tools) then reaches it over that bridge.  Mixing loopback and non-loopback
  clients makes ibsim abort ("can't connect to in socket ... Invalid
  argument"): a slot socket connected once over loopback cannot be
  reconnected to a bridge address.

Clients (OpenSM, infiniband-diags) attach through the umad2sim LD_PRELOAD
library.  They wait FOREVER when the simulator is gone: always call them
with a timeout (see ``fabric_tools``).  At most 10 clients can be attached at
once (IBSIM_MAX_CLIENTS); a client killed by a timeout keeps its slot until
ibsim notices, ``Console.disconnect`` frees it by force.
"""

from __future__ import annotations

import errno
import fcntl
import glob
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from clusterforge.lab.errors import LabError
from clusterforge.lab.proc import ProcessRecord, is_alive, spawn_daemon, stop_process, tail, wait_for_log

#: ibsim's default UDP control port in remote mode (Debian 12, ibsim 0.10).
DEFAULT_REMOTE_PORT = 7070
#: Client slots in ibsim (IBSIM_MAX_CLIENTS).
MAX_CLIENTS = 10
_PROMPT = "sim> "
_BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def umad2sim_path() -> str:
    """Path of libumad2sim.so (package libumad2sim0), multiarch-aware."""
    found = sorted(glob.glob("/usr/lib/*/umad2sim/libumad2sim.so"))
    found += sorted(glob.glob("/usr/lib/umad2sim/libumad2sim.so"))
    if not found:
        raise LabError("libumad2sim.so not found: install libumad2sim0 (scripts/lab-deps.sh)")
    return found[0]


@dataclass(frozen=True)
class LocalEndpoint:
    sockname: str


@dataclass(frozen=True)
class RemoteEndpoint:
    address: str
    port: int = DEFAULT_REMOTE_PORT
    netns: str | None = None


Endpoint = LocalEndpoint | RemoteEndpoint


def endpoint_to_json(ep: Endpoint) -> dict[str, object]:
    if isinstance(ep, LocalEndpoint):
        return {"kind": "local", "sockname": ep.sockname}
    return {"kind": "remote", "address": ep.address, "port": ep.port, "netns": ep.netns}


def endpoint_from_json(data: Mapping[str, object]) -> Endpoint:
    if data.get("kind") == "local":
        return LocalEndpoint(str(data["sockname"]))
    port = data.get("port", DEFAULT_REMOTE_PORT)
    netns = data.get("netns")
    return RemoteEndpoint(
        str(data["address"]),
        int(port) if isinstance(port, int) else DEFAULT_REMOTE_PORT,
        str(netns) if netns else None,
    )


def client_env(
    endpoint: Endpoint,
    sim_host: str | None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Environment for an umad2sim client (opensm, ibstat, ibnetdiscover, ...).

    ``sim_host`` is the ibsim node id or node description the client attaches
    to (which HCA it "is"); None attaches to the first node of the net file.
    """
    env = dict(base) if base is not None else {"PATH": _BASE_PATH, "LC_ALL": "C"}
    if "HOME" not in env and "HOME" in os.environ:
        env["HOME"] = os.environ["HOME"]
    env["LD_PRELOAD"] = umad2sim_path()
    for key in ("IBSIM_SOCKNAME", "IBSIM_SERVER_NAME", "IBSIM_SERVER_PORT", "SIM_HOST"):
        env.pop(key, None)
    if isinstance(endpoint, LocalEndpoint):
        env["IBSIM_SOCKNAME"] = endpoint.sockname
    else:
        env["IBSIM_SERVER_NAME"] = endpoint.address
        env["IBSIM_SERVER_PORT"] = str(endpoint.port)
    if sim_host is not None:
        env["SIM_HOST"] = sim_host
    return env


@dataclass(frozen=True)
class IbSim:
    """A running (or recorded) simulator."""

    process: ProcessRecord
    endpoint: Endpoint
    workdir: Path
    netfile: Path

    @property
    def console_path(self) -> Path:
        return self.workdir / "console"

    @property
    def log_path(self) -> Path:
        return self.workdir / "ibsim.log"

    def to_json(self) -> dict[str, object]:
        return {
            "process": self.process.to_json(),
            "endpoint": endpoint_to_json(self.endpoint),
            "workdir": str(self.workdir),
            "netfile": str(self.netfile),
        }

    @staticmethod
    def from_json(data: Mapping[str, object]) -> IbSim:
        proc, ep = data["process"], data["endpoint"]
        if not isinstance(proc, dict) or not isinstance(ep, dict):
            raise ValueError(f"bad ibsim record {data!r}")
        return IbSim(
            ProcessRecord.from_json(proc),
            endpoint_from_json(ep),
            Path(str(data["workdir"])),
            Path(str(data["netfile"])),
        )


def start_ibsim(
    netfile: Path,
    workdir: Path,
    endpoint: Endpoint,
    *,
    timeout: float = 15.0,
    limits: tuple[int, int, int] | None = None,
) -> IbSim:
    """Start ``ibsim -s`` on ``netfile``; return once its console prompt is up.

    The console is a FIFO in ``workdir`` that ibsim holds open read-write, so
    it never sees EOF and any process can write fault commands to it later.
    ``limits``: ibsim's table sizes (nodes, switches, ports: ``-N -S -P``) for a
    fabric beyond its defaults (13,312 ports in ibsim 0.10: under 2,048 nodes).
    """
    netfile = netfile.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    fifo = workdir / "console"
    if fifo.exists() or fifo.is_symlink():
        fifo.unlink()
    os.mkfifo(fifo, 0o600)
    log = workdir / "ibsim.log"
    log.write_bytes(b"")
    argv: list[str] = []
    if isinstance(endpoint, RemoteEndpoint):
        if endpoint.netns:
            argv += ["ip", "netns", "exec", endpoint.netns]
        argv += ["ibsim", "-s", "-r", "-l", str(endpoint.port), str(netfile)]
        sockname = f"cf-{os.getpid()}-{endpoint.port}"
    else:
        argv += ["ibsim", "-s", str(netfile)]
        sockname = endpoint.sockname
    if limits is not None:
        argv[-1:-1] = ["-N", str(limits[0]), "-S", str(limits[1]), "-P", str(limits[2])]
    env = {"PATH": _BASE_PATH, "LC_ALL": "C", "IBSIM_SOCKNAME": sockname}
    console_fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    os.set_blocking(console_fd, True)
    try:
        proc = spawn_daemon(argv, name="ibsim", env=env, cwd=workdir, stdin=console_fd, log=log)
    finally:
        os.close(console_fd)
    wait_for_log(proc, log, _PROMPT, "ibsim", timeout, poll=0.05)
    return IbSim(proc, endpoint, workdir, netfile)


def stop_ibsim(sim: IbSim) -> None:
    """Stop the simulator (idempotent) and remove its console FIFO."""
    stop_process(sim.process)
    if sim.console_path.exists():
        sim.console_path.unlink()


def ibsim_running(sim: IbSim) -> bool:
    return is_alive(sim.process)


@dataclass(frozen=True)
class AttachedClient:
    client: int
    pid: int
    node: str
    is_sm: bool


_ATTACHED = re.compile(r'^Client (\d+): pid (\d+) connected at "([^"]*)".*?(\bSM)?\s*$')


class Console:
    """Send commands to a running ibsim's console and read their replies."""

    def __init__(self, sim: IbSim) -> None:
        self.sim = sim

    def command(self, line: str, *, timeout: float = 5.0) -> str:
        """Run one console command; return its reply (ibwarn noise removed)."""
        if "\n" in line or "\r" in line:
            raise ValueError("one console command per call")
        lock_path = self.sim.workdir / "console.lock"
        with open(lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                return self._command(line, timeout)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _command(self, line: str, timeout: float) -> str:
        if not ibsim_running(self.sim):
            raise LabError("ibsim is not running")
        log = self.sim.log_path
        start = log.stat().st_size
        try:
            fd = os.open(self.sim.console_path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                raise LabError("ibsim console has no reader (simulator gone)") from exc
            raise
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(log, "rb") as f:
                f.seek(start)
                chunk = f.read().decode(errors="replace")
            if _PROMPT in chunk:
                reply = chunk[: chunk.index(_PROMPT)]
                return "\n".join(
                    ln for ln in reply.splitlines() if ln.strip() and not ln.startswith("ibwarn:")
                )
            if not ibsim_running(self.sim):
                raise LabError(f"ibsim died running {line!r}:\n{tail(chunk)}")
            time.sleep(0.02)
        raise LabError(f"ibsim console did not answer {line!r} within {timeout:g}s")

    def attached(self) -> list[AttachedClient]:
        out = []
        for ln in self.command("Attached").splitlines():
            m = _ATTACHED.match(ln.strip())
            if m:
                out.append(
                    AttachedClient(int(m.group(1)), int(m.group(2)), m.group(3), bool(m.group(4)))
                )
        return out

    def disconnect(self, client: int) -> None:
        """Force-free a client slot (``X <n>``), e.g. one left by a killed tool."""
        self.command(f"X {int(client)}")
