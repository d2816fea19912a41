"""The rendered lab files against the real InfiniBand software (Debian ibsim-utils, opensm).

ibsim simulates the fabric from the rendered net file; ibnetdiscover (through
libumad2sim) must then see exactly the inventory's switches, CAs and links at 4xHDR,
with the rendered GUIDs; OpenSM run once on the simulated fabric with the rendered
opensm.conf, GUID files and partitions must route with ftree and parse every partition.

Skipped only when the ibsim binary is missing (CI installs it: scripts/lab-deps.sh).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from _render_common import index_of, lab_data, lab_index

from clusterforge.render import render_environment

IBSIM = shutil.which("ibsim")
pytestmark = pytest.mark.skipif(
    IBSIM is None, reason="ibsim is not installed (apt-get install ibsim-utils libumad2sim0 infiniband-diags)"
)

READY = "Network simulator ready"
_RECORD = re.compile(r'^(Switch|Ca)\s+(\d+)\s+"([SH])-([0-9a-f]+)"\s+#\s+"([^"]*)"')
_PORT = re.compile(
    r'^\[(\d+)\](?:\(([0-9a-f]+)\))?\s+"[SH]-[0-9a-f]+"\[(\d+)\](?:\([0-9a-f]+\))?\s+#.*"([^"]*)" lid \d+ (\w+)$'
)


def _umad2sim() -> str:
    found = sorted(glob.glob("/usr/lib/*/umad2sim/libumad2sim.so") + glob.glob("/usr/lib*/umad2sim/libumad2sim.so"))
    assert found, "ibsim is installed but libumad2sim.so is not (apt-get install libumad2sim0)"
    return found[0]


def _tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"ibsim is installed but {name} is not (apt-get install infiniband-diags opensm)"
    return path


@dataclass
class Sim:
    env: dict[str, str]
    files: dict[str, str]
    workdir: Path


def _partitioned_lab() -> dict[str, str]:
    """The lab plus two named partitions, so OpenSM parses GUID and keyword member lists."""
    data = lab_data()
    data["opensm"]["partitions"] += [
        {"name": "compute", "pkey": 1, "ipoib": True, "mtu": 4, "members": [
            {"device": "gpu01"}, {"device": "gpu02"}, {"device": "lus01", "membership": "limited"},
            {"device": "spine01"}]},
        {"name": "mgmt", "pkey": 2, "members": [{"device": "ALL_SWITCHES"}, {"device": "SELF"}]},
    ]
    return render_environment(index_of(data), "lab")


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    assert IBSIM is not None
    files = _partitioned_lab()
    assert files["fabric/ibsim.net"] == render_environment(lab_index(), "lab")["fabric/ibsim.net"]
    workdir = tmp_path_factory.mktemp("ibsim")
    net = workdir / "ibsim.net"
    net.write_text(files["fabric/ibsim.net"])
    env = {**os.environ, "IBSIM_SOCKNAME": f"cfrender-{os.getpid()}-{uuid.uuid4().hex[:8]}"}
    log = (workdir / "ibsim.log").open("w")
    proc = subprocess.Popen(
        [IBSIM, "-s", "-n", str(net)], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env
    )
    try:
        deadline = time.monotonic() + 15
        while READY not in (workdir / "ibsim.log").read_text():
            assert proc.poll() is None, "ibsim exited: " + (workdir / "ibsim.log").read_text()
            assert time.monotonic() < deadline, "ibsim did not get ready in 15 s"
            time.sleep(0.05)
        yield Sim({**env, "LD_PRELOAD": _umad2sim()}, files, workdir)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        log.close()
    assert "ibwarn" not in (workdir / "ibsim.log").read_text(), "ibsim warned about the net file"


def _sm_host(files: dict[str, str]) -> str:
    m = re.search(r'^Hca\s+\d+\s+"(H-[0-9a-f]+)"\s+#\s+"sm01 mlx5_0"', files["fabric/ibsim.net"], re.M)
    assert m
    return m.group(1)


def _expected_links() -> set[frozenset[tuple[str, int]]]:
    out = set()
    for cable in lab_index().inv.cables:
        ends = [(r.device if r.hca is None else f"{r.device} {r.hca}", r.port) for r in (cable.a, cable.b)]
        out.add(frozenset(ends))
    return out


def test_ibnetdiscover_sees_the_inventory(sim: Sim) -> None:
    done = subprocess.run(
        [_tool("ibnetdiscover")], env={**sim.env, "SIM_HOST": _sm_host(sim.files)},
        capture_output=True, text=True, timeout=30, check=False,
    )
    assert done.returncode == 0, done.stderr
    kinds: dict[str, str] = {}
    links: set[frozenset[tuple[str, int]]] = set()
    modes: set[str] = set()
    port_guids: set[int] = set()
    node_guids: dict[str, int] = {}
    desc = ""
    for line in done.stdout.splitlines():
        if m := _RECORD.match(line):
            desc = m.group(5)
            kinds[desc] = m.group(1)
            node_guids[desc] = int(m.group(4), 16)
        elif m := _PORT.match(line):
            if m.group(2):
                port_guids.add(int(m.group(2), 16))
            links.add(frozenset({(desc, int(m.group(1))), (m.group(4), int(m.group(3)))}))
            modes.add(m.group(5))
    index = lab_index()
    assert sorted(d for d, k in kinds.items() if k == "Switch") == sorted(s.name for s in index.inv.switches)
    assert sum(k == "Ca" for k in kinds.values()) == 19
    assert links == _expected_links()
    assert modes == {"4xHDR"}
    # the simulated GUIDs are the rendered ones
    rendered = {int(line.split()[0], 16) for name in ("cn-guids.conf", "io-guids.conf")
                for line in sim.files[f"opensm/sm01/{name}"].splitlines() if line.startswith("0x")}
    assert rendered <= port_guids
    roots = {int(line.split()[0], 16) for line in sim.files["opensm/sm01/root-guids.conf"].splitlines()
             if line.startswith("0x")}
    assert roots == {node_guids["spine01"], node_guids["spine02"]}


def test_opensm_routes_with_the_rendered_files(sim: Sim) -> None:
    opensm = shutil.which("opensm")
    if opensm is None:
        pytest.skip("opensm is not installed (apt-get install opensm)")
    etc = sim.workdir / "opensm"
    etc.mkdir()
    for rel, text in sim.files.items():
        if rel.startswith("opensm/sm01/"):
            (etc / Path(rel).name).write_text(text.replace("/etc/opensm", str(etc)))
    log = sim.workdir / "opensm.log"
    env = {**sim.env, "SIM_HOST": _sm_host(sim.files), "OSM_CACHE_DIR": str(etc), "OSM_TMP_DIR": str(etc)}
    done = subprocess.run(
        [opensm, "-F", str(etc / "opensm.conf"), "--once", "-f", str(log), "-D", "0x03"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )
    text = log.read_text()
    assert done.returncode == 0, done.stdout + done.stderr
    assert " 0x01 -> " not in text, text  # no OpenSM error (partition parse errors log here)
    assert "PARSE ERROR" not in text and "PARSE ERROR" not in done.stdout
    assert "19 CAs, 19 CA ports (16 of them CNs), 7 switches" in text
    assert "Fabric has 2 switches at rank 0 (roots)" in text
    assert "ftree tables configured on all switches" in text
