"""The lab's acceptance stand-in tools (lab/accept_guest.py), run as the containers run them, here on loopback:
the answers are the stand-in outputs for the lab's plan, `ib_write_bw` keeps perftest's server/client
exchange over TCP, and anything the plan does not run exits 127 like a missing tool."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time
from pathlib import Path

import pytest

from cf_http import free_port
from clusterforge.accept.plan import AcceptPlan, accept_plan
from clusterforge.api import load_checked
from clusterforge.lab.accept_guest import ANSWERS, answers, arm, disarm
from clusterforge.lab.accept_standins import capture, outputs
from clusterforge.parse import perftest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def plan() -> AcceptPlan:
    return accept_plan(load_checked(ROOT / "inventories" / "lab").index)


def _armed(tmp: Path, plan: AcceptPlan, down: str | None = None) -> tuple[Path, dict[str, Path]]:
    rates: dict[str, float | None] = {p.label: (None if p.cable == down else 200.0) for p in plan.ports}
    texts = outputs(plan, rates)
    sbin = tmp / "sbin"
    sbin.mkdir()
    hosts = {n: tmp / "hosts" / n for n in {t.node for t in plan.nodes} | {p.node for p in plan.ports}}
    for d in hosts.values():
        d.mkdir(parents=True)
    assert arm(sbin, hosts, answers(plan, texts)) > 0
    return sbin, hosts


def _tool(sbin: Path, host_dir: Path, argv: list[str], path: list[Path] | None = None) -> subprocess.Popen[str]:
    """The stand-in as its tool name (the symlink), with its host's lab directory (PATH: `path`, else none of
    the machine's)."""
    env = {**os.environ, "CLUSTERFORGE_LAB_IB_CONF": str(host_dir / "ib.json"),
           "PATH": os.pathsep.join(str(p) for p in (path or [sbin]))}
    return subprocess.Popen([str(sbin / argv[0]), *argv[1:]], env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def _run(sbin: Path, host_dir: Path, argv: list[str], path: list[Path] | None = None) -> tuple[int, str, str]:
    p = _tool(sbin, host_dir, argv, path)
    out, err = p.communicate(timeout=60)
    return p.returncode, out, err


def test_node_tools_print_the_hosts_answers_and_nothing_else(plan: AcceptPlan, tmp_path: Path) -> None:
    sbin, hosts = _armed(tmp_path, plan)
    node = plan.nodes[0]
    rc, out, _ = _run(sbin, hosts[node.node], node.commands["nvidia-smi-q"])
    assert rc == 0 and out == capture("nvidia-smi-q")
    rc, out, _ = _run(sbin, hosts[node.node], node.commands["dcgmi-diag"])
    assert rc == 0 and out == capture("dcgmi-diag")
    # nvlink's status is one command for accept and validate alike (collect/tools.py): answered while armed
    rc, out, _ = _run(sbin, hosts[node.node], node.commands["nvidia-smi-nvlink"])
    assert node.commands["nvidia-smi-nvlink"] == ["nvidia-smi", "nvlink", "--status"]
    assert rc == 0 and out == capture("nvidia-smi-nvlink")
    # validate's other nvidia-smi commands and an unknown argv find no tool (127), as on a host without one
    for argv in (["nvidia-smi", "topo", "-m"], ["dcgmi", "discovery", "-l"]):
        rc, _, err = _run(sbin, hosts[node.node], argv)
        assert rc == 127 and "LAB-ONLY" in err
    # ... unless another tool of that name comes later on PATH (the lab's own nvidia-smi stand-in): it answers
    other = tmp_path / "bin"
    other.mkdir()
    (other / "nvidia-smi").write_text("#!/bin/sh\necho \"the next nvidia-smi: $*\"\n")  # constructed
    (other / "nvidia-smi").chmod(0o755)
    rc, out, _ = _run(sbin, hosts[node.node], ["nvidia-smi", "topo", "-m"], path=[sbin, other])
    assert (rc, out) == (0, "the next nvidia-smi: topo -m\n")
    assert disarm(hosts) == len(hosts)  # the answers gone, the tools left: nothing is answered
    rc, _, err = _run(sbin, hosts[node.node], node.commands["nvidia-smi-q"])
    assert rc == 127 and "not armed" in err
    assert disarm(hosts, sbin) == 0
    assert not (sbin / "nvidia-smi").exists() and not (sbin / "cf-accept-standin").exists()


def test_mpirun_answers_its_group_on_the_launcher(plan: AcceptPlan, tmp_path: Path) -> None:
    sbin, hosts = _armed(tmp_path, plan)
    ft = plan.fabric[-1]
    rc, out, _ = _run(sbin, hosts[ft.nodes[0]], ft.argv())
    assert rc == 0 and "# Avg bus bandwidth" in out
    rc, _, _ = _run(sbin, hosts[ft.nodes[1]], ft.argv())  # not the launcher: no answer there
    assert rc == 127


def _link(sbin: Path, hosts: dict[str, Path], plan: AcceptPlan, cable: str | None) -> tuple[int, str, str]:
    t = next(t for t in plan.links if cable is None or cable in (t.client.cable, t.server.cable))
    t = dataclasses.replace(t, tcp_port=free_port())
    server_argv, client_argv = t.argv("127.0.0.1")
    server = _tool(sbin, hosts[t.server.node], server_argv)
    try:
        assert server.stdout is not None
        deadline = time.monotonic() + 30
        while "Waiting for client to connect" not in server.stdout.readline():
            assert time.monotonic() < deadline and server.poll() is None
        rc, out, err = _run(sbin, hosts[t.client.node], client_argv)
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
        server.communicate()
    return rc, out, err


def test_ib_write_bw_client_reaches_its_server_and_prints_that_links_answer(plan: AcceptPlan,
                                                                           tmp_path: Path) -> None:
    sbin, hosts = _armed(tmp_path, plan)
    rc, out, _ = _link(sbin, hosts, plan, None)
    assert rc == 0
    assert perftest.parse(out).bw_avg_gbps == pytest.approx(0.981 * 200, abs=0.1)


def test_a_down_link_is_perftests_failure(plan: AcceptPlan, tmp_path: Path) -> None:
    cable = plan.links[0].client.cable
    sbin, hosts = _armed(tmp_path, plan, down=cable)
    rc, out, err = _link(sbin, hosts, plan, cable)
    assert rc == 1 and out == "" and err == capture("ib_write_bw-failed")


def test_a_client_without_its_server_is_refused(plan: AcceptPlan, tmp_path: Path) -> None:
    sbin, hosts = _armed(tmp_path, plan)
    t = dataclasses.replace(plan.links[0], tcp_port=free_port())
    rc, out, err = _run(sbin, hosts[t.client.node], t.argv("127.0.0.1")[1])
    assert rc == 1 and "Couldn't connect to 127.0.0.1" in err and out == ""
    assert (hosts[t.client.node] / ANSWERS / "node").read_text().strip() == t.client.node
