"""OpenSM and infiniband-diags run against the simulator, always with timeouts.

Every client gets its own scratch working directory: umad2sim writes a fake
``./sys-<pid>`` sysfs tree into the current directory (and removes it only on
a clean exit).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from clusterforge.lab.errors import CommandError
from clusterforge.lab.ibsim import MAX_CLIENTS, Endpoint, client_env
from clusterforge.lab.proc import ProcessRecord, Result, is_alive, run, spawn_daemon, stop_process, wait_for_log

#: ibstat calls run at once by ``ibstat_many``: ibsim has 10 client slots and
#: OpenSM holds one; keep a margin for the caller's own tools.
MAX_CONCURRENT_CLIENTS = 8
DEFAULT_TIMEOUT = 30.0


@dataclass(frozen=True)
class FabricClient:
    """Where host-side tools attach: the simulator endpoint and the HCA they act as."""

    endpoint: Endpoint
    sim_host: str | None
    scratch: Path

    def env(self, sim_host: str | None = None) -> dict[str, str]:
        return client_env(self.endpoint, sim_host if sim_host is not None else self.sim_host)


def run_client(
    client: FabricClient,
    argv: Sequence[str],
    *,
    sim_host: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    check: bool = True,
) -> Result:
    """Run one umad2sim client tool in a private scratch directory."""
    client.scratch.mkdir(parents=True, exist_ok=True)
    cwd = Path(tempfile.mkdtemp(prefix="client-", dir=client.scratch))
    try:
        return run(argv, timeout=timeout, env=client.env(sim_host), cwd=cwd, check=check)
    finally:
        shutil.rmtree(cwd, ignore_errors=True)


def ibnetdiscover(client: FabricClient, *, timeout: float = DEFAULT_TIMEOUT) -> str:
    return run_client(client, ["ibnetdiscover"], timeout=timeout).stdout


def iblinkinfo(client: FabricClient, *, timeout: float = DEFAULT_TIMEOUT) -> str:
    return run_client(client, ["iblinkinfo"], timeout=timeout).stdout


def ibstat(client: FabricClient, sim_host: str, *, timeout: float = DEFAULT_TIMEOUT) -> str:
    return run_client(client, ["ibstat"], sim_host=sim_host, timeout=timeout).stdout


def _dest(dest: int | str, directed: bool) -> list[str]:
    """Destination arguments: a LID, or ``-D <path>`` for a directed route like "0,1,7"."""
    if directed:
        path = str(dest)
        if not all(part.isdigit() for part in path.split(",")):
            raise ValueError(f"bad directed route {path!r}")
        return ["-D", path]
    return [str(int(dest))]


def ibportstate(
    client: FabricClient,
    dest: int | str,
    port: int,
    *op: str,
    directed: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> str:
    argv = ["ibportstate", *_dest(dest, directed), str(int(port)), *op]
    return run_client(client, argv, timeout=timeout).stdout


def smpquery_portinfo(
    client: FabricClient,
    dest: int | str,
    port: int,
    *,
    directed: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> str:
    argv = ["smpquery", *_dest(dest, directed)[:-1], "portinfo", _dest(dest, directed)[-1],
            str(int(port))]
    return run_client(client, argv, timeout=timeout).stdout


def ibstat_many(
    client: FabricClient,
    sim_hosts: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    max_concurrent: int = MAX_CONCURRENT_CLIENTS,
) -> dict[str, Result]:
    """``ibstat`` as every given HCA, at most ``max_concurrent`` at a time.

    Failures are returned (returncode != 0 / stderr), not raised, so one
    broken HCA does not hide the others.
    """
    if not 1 <= max_concurrent <= MAX_CLIENTS - 1:
        raise ValueError(f"max_concurrent must be 1..{MAX_CLIENTS - 1}")

    def one(sim_host: str) -> tuple[str, Result]:
        try:
            return sim_host, run_client(
                client, ["ibstat"], sim_host=sim_host, timeout=timeout, check=False
            )
        except CommandError as exc:  # timeout
            return sim_host, Result(exc.argv, -1, exc.stdout, str(exc))

    with ThreadPoolExecutor(max_workers=max_concurrent) as pool:
        return dict(pool.map(one, sim_hosts))


# -- OpenSM on the host --------------------------------------------------------


@dataclass(frozen=True)
class OpenSm:
    process: ProcessRecord
    workdir: Path
    sim_host: str

    def to_json(self) -> dict[str, object]:
        return {
            "process": self.process.to_json(),
            "workdir": str(self.workdir),
            "sim_host": self.sim_host,
        }

    @staticmethod
    def from_json(data: Mapping[str, object]) -> OpenSm:
        proc = data["process"]
        if not isinstance(proc, dict):
            raise ValueError(f"bad opensm record {data!r}")
        return OpenSm(
            ProcessRecord.from_json(proc), Path(str(data["workdir"])), str(data["sim_host"])
        )


#: opensm options for the guid files it reads.
GUID_FILE_OPTIONS: dict[str, str] = {
    "root_guid_file": "--root_guid_file",
    "cn_guid_file": "--cn_guid_file",
    "io_guid_file": "--io_guid_file",
    "ids_guid_file": "--ids_guid_file",
    "guid_routing_order_file": "--guid_routing_order_file",
}


def opensm_argv(
    *,
    log_file: str,
    config: Path | None = None,
    guid_files: Mapping[str, Path] | None = None,
    sweep_interval: int | None = None,
) -> list[str]:
    """opensm command line (used on the host and inside the SM container)."""
    argv = ["opensm", "-f", log_file]
    if config is not None:
        argv += ["-F", str(config)]
    for key, path in sorted((guid_files or {}).items()):
        if key not in GUID_FILE_OPTIONS:
            raise ValueError(f"unknown guid file {key!r}; known: {sorted(GUID_FILE_OPTIONS)}")
        argv += [GUID_FILE_OPTIONS[key], str(path)]
    if sweep_interval is not None:
        argv += ["-s", str(int(sweep_interval))]
    return argv


def start_opensm(
    client: FabricClient,
    sim_host: str,
    workdir: Path,
    *,
    config: Path | None = None,
    guid_files: Mapping[str, Path] | None = None,
    sweep_interval: int | None = 2,
    netns: str | None = None,
    timeout: float = 30.0,
) -> OpenSm:
    """Run OpenSM as ``sim_host`` with its own fresh cache/tmp dir.

    ``netns``: run it inside that network namespace (a remote-mode client must
    reach ibsim over the same kind of path as every other client).
    Returns once OpenSM reports MASTER state.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    cache = workdir / "cache"
    if cache.exists():
        shutil.rmtree(cache)
    cache.mkdir()
    log = workdir / "opensm.log"
    out = workdir / "opensm.out"
    for f in (log, out):
        f.write_bytes(b"")
    env = client.env(sim_host)
    env["OSM_CACHE_DIR"] = str(cache)
    env["OSM_TMP_DIR"] = str(cache)
    argv = opensm_argv(
        log_file=str(log), config=config, guid_files=guid_files, sweep_interval=sweep_interval
    )
    if netns:
        argv = ["ip", "netns", "exec", netns, *argv]
    proc = spawn_daemon(argv, name="opensm", env=env, cwd=workdir, stdin=subprocess.DEVNULL, log=out)
    wait_for_log(proc, out, "Entering MASTER state", "opensm", timeout)
    return OpenSm(proc, workdir, sim_host)


def stop_opensm(sm: OpenSm) -> None:
    stop_process(sm.process)


def opensm_running(sm: OpenSm) -> bool:
    return is_alive(sm.process)
