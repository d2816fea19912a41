"""A rendered fabric routed by the real OpenSM under ibsim, its forwarding tables as the real tools print them
(issue #36): the fixtures' capture (tests/fixtures/ibroute/capture.py), prod's routed plan in the lab tests and the
routed-plan bench at 2,048 nodes all take their tables from here.

ibsim runs the fabric (`fabric/ibsim.net` of a render), OpenSM attaches as the SM node's HCA with the engine asked
(`lmc 0`, one sweep: no periodic re-sweep) and dumps its own LFTs (`opensm-lfts.dump`, log_flags 0x43 into
dump_files_dir); with `diags`, infiniband-diags through libumad2sim print them too: `ibroute <lid>` for every
switch of `ibswitches`, and `dump_fts` (both make an SMP query per table block: minutes on a 2,048-node fabric,
so the bench reads OpenSM's dump only). Three processes on this machine, no containers; stopped whatever
happens.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from clusterforge.lab.fabric_tools import FabricClient, run_client, start_opensm, stop_opensm
from clusterforge.lab.ibsim import LocalEndpoint, start_ibsim, stop_ibsim

ROUTED = re.compile(r"[^\n]*(\w+) tables configured on all switches")


@dataclass(frozen=True)
class RoutedFabric:
    lfts_path: Path
    """OpenSM's own opensm-lfts.dump, where it wrote it (2.1 GB for a 2,048-node fabric: read it as a stream,
    `ibroute.read(read_lines(path))`)."""
    routed_line: str
    """OpenSM's log line saying which engine configured the tables."""
    route_s: float
    """From OpenSM's start to its dump on disk: its first sweep, routing included."""
    ibswitches: str = ""
    ibroute: str = ""
    dump_fts: str = ""
    ibnetdiscover: str = ""

    @property
    def lfts_dump(self) -> str:
        """The dump's text (a small fabric's)."""
        return self.lfts_path.read_text(encoding="utf-8", errors="replace")


def route_fabric(net: str, sm_desc: str, engine: str, workdir: Path, *, diags: bool = True,
                 timeout_s: float = 600.0) -> RoutedFabric:
    """Route the ibsim fabric `net` (its text) with `engine`, OpenSM running as the CA `sm_desc` ("sm01 mlx5_0")."""
    workdir.mkdir(parents=True, exist_ok=True)
    netfile = workdir / "ibsim.net"
    netfile.write_text(net, encoding="utf-8")
    dumps = workdir / "dumps"
    dumps.mkdir(exist_ok=True)
    conf = workdir / "opensm.conf"
    # force_log_flush: the "tables configured" line is written when logged, not when the buffer fills
    conf.write_text(f"routing_engine {engine}\nlmc 0\ndump_files_dir {dumps}\nlog_flags 0x43\nforce_log_flush TRUE\n",
                    encoding="utf-8")
    sim = start_ibsim(netfile, workdir / "ibsim", LocalEndpoint(f"cf-routes-{os.getpid()}-{time.monotonic_ns()}"),
                      timeout=max(15.0, timeout_s / 10), limits=_limits(net))
    client = FabricClient(sim.endpoint, sm_desc, workdir / "scratch")
    try:
        start = time.monotonic()
        osm = start_opensm(client, sm_desc, workdir / "opensm", config=conf, sweep_interval=0, timeout=timeout_s)
        try:
            lfts = dumps / "opensm-lfts.dump"
            line = _dumped(lfts, workdir / "opensm" / "opensm.log", start + timeout_s)
            route_s = time.monotonic() - start
            if not line.endswith(f"{engine} tables configured on all switches"):
                raise RuntimeError(f"OpenSM routed with another engine than {engine}: {line}")
            if not diags:
                return RoutedFabric(lfts, line, route_s)
            switches = run_client(client, ["ibswitches"], timeout=timeout_s).stdout
            lids = re.findall(r"\slid (\d+)\s", switches)
            if not lids:
                raise RuntimeError(f"ibswitches listed no switch: {switches[-500:]!r}")
            routes = "".join(run_client(client, ["ibroute", lid], timeout=timeout_s).stdout for lid in lids)
            fts = run_client(client, ["dump_fts"], timeout=timeout_s).stdout
            disc = run_client(client, ["ibnetdiscover"], timeout=timeout_s).stdout
            return RoutedFabric(lfts, line, route_s, switches, routes, fts, disc)
        finally:
            stop_opensm(osm)
    finally:
        stop_ibsim(sim)


def _limits(net: str) -> tuple[int, int, int] | None:
    """ibsim's -N/-S/-P for a fabric beyond its default tables (13,312 ports), with room to spare; else None."""
    ports = sum(int(m.group(1)) for m in re.finditer(r"^(?:Switch|Hca|Ca)\s+(\d+)", net, re.M))
    nodes = len(re.findall(r"^(?:Switch|Hca|Ca)\s", net, re.M))
    switches = len(re.findall(r"^Switch\s", net, re.M))
    if ports < 12000:
        return None
    return 2 * nodes, 2 * switches + 64, 2 * ports + 4096


def _dumped(path: Path, log: Path, deadline: float) -> str:
    """OpenSM's log line saying the tables are configured, once it is logged and the LFT dump is whole: its last
    block's footer written and its size still for half a second (the file is never read whole here)."""
    while True:
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        lines = [m.group(0).split("]")[-1].strip() for m in ROUTED.finditer(text)]
        if lines and path.is_file() and _tail(path).rstrip().endswith(b"lids dumped"):
            size = path.stat().st_size
            time.sleep(0.5)
            if path.stat().st_size == size:
                return lines[0]
        if time.monotonic() > deadline:
            raise RuntimeError(f"OpenSM did not dump its tables in time ({path}): {text[-2000:]}")
        time.sleep(0.5)


def _tail(path: Path, size: int = 256) -> bytes:
    with path.open("rb") as fh:
        fh.seek(max(path.stat().st_size - size, 0))
        return fh.read()
