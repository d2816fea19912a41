"""The monitoring component on an EL9 node (#34): gpu08 AlmaLinux-9-shaped (a LAB-ONLY Debian root with the real rpm
and dnf), gpu01 Debian and the monitoring server sm01, with systemd as PID 1. On gpu08 the real dnf installs EPEL's
golang-github-prometheus-node-exporter from the lab's dnf repository (Debian's real node_exporter under that name,
labelled LAB-ONLY), the deploy writes /etc/sysconfig/node_exporter and the node_exporter.service drop-in that runs
it with those arguments, starts node_exporter, and vmagent on sm01 scrapes it: `up`, its HCA ports labelled from
the model. A second run of either engine changes nothing.

A copy of inventories/lab on its own free /24 and lab root.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cf_lab_monitoring import deploy_nodes, query
from cf_lab_net import free_block, lab_copy
from cf_os_families import declare_os
from clusterforge.deploy.ansible_api import deploy_ansible
from clusterforge.deploy.api import DeployRequest
from clusterforge.lab import ssh_command
from clusterforge.lab.proc import run
from clusterforge.rehearsal import env as labenv
from clusterforge.rehearsal.stage import LabStage

ROOT = Path(__file__).resolve().parents[2]
NODES = ["gpu01", "gpu08", "sm01"]
pytestmark = [pytest.mark.lab, pytest.mark.long]


def _edit(env: Path) -> None:
    net = free_block(24).rsplit(".", 1)[0] + "."
    for f in env.glob("*.yaml"):
        f.write_text(f.read_text().replace("198.18.10.", net))
    declare_os(env, {"gpu08": "alma9"})


@pytest.fixture(scope="module")
def label(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with lab_copy(tmp_path_factory, ROOT / "inventories" / "lab", "label", "--systemd", "--limit", ",".join(NODES),
                  edit=_edit) as env:
        yield env


def test_node_exporter_on_el9_is_epels_and_is_scraped(label: Path, tmp_path: Path) -> None:
    state = labenv.running(label)
    assert state is not None and sorted(state.hosts) == sorted(NODES)

    def sh(host: str, script: str) -> str:
        return run(ssh_command(state, host, ["sh", "-c", script]), timeout=60, check=False).stdout

    assert "ID=\"almalinux\"" in sh("gpu08", "cat /etc/os-release")
    plan = tmp_path / "result.json"
    hosts = deploy_nodes(label, NODES, plan)
    started = {(h, c["target"]) for h, r in hosts.items() for c in r["changes"]
               if c["component"] == "monitoring" and c["kind"] == "service"}
    assert {("gpu08", "node_exporter"), ("gpu01", "prometheus-node-exporter")} <= started, started
    assert ("gpu08", "prometheus-node-exporter") not in started
    assert sh("gpu08", "rpm -q --qf '%{NAME}\\n' golang-github-prometheus-node-exporter").strip() == \
        "golang-github-prometheus-node-exporter"
    assert sh("gpu08", "systemctl is-active node_exporter").strip() == "active"
    assert sh("gpu08", "test -e /etc/default/prometheus-node-exporter && echo there").strip() == ""
    # the drop-in's command is what runs: the rendered arguments, not the packaged unit's $OPTIONS
    exec_start = sh("gpu08", "systemctl show -p ExecStart --value node_exporter")
    assert "argv[]=/usr/bin/node_exporter $ARGS " in exec_start, exec_start
    running = sh("gpu08", "tr '\\0' ' ' < /proc/$(systemctl show -p MainPID --value node_exporter)/cmdline")
    assert "--collector.infiniband" in running and "--web.listen-address=:9100" in running, running

    sm01 = state.hosts["sm01"].address
    want = {("node/gpu08", "gpu08:9100"), ("node/gpu01", "gpu01:9100")}
    deadline = time.monotonic() + 90
    while True:
        up = {(r["metric"].get("job"), r["metric"].get("instance")): r["value"][1]
              for r in query(sm01, "up") if r["metric"].get("host") in NODES}
        if all(up.get(t) == "1" for t in want) or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert {t: up.get(t) for t in want} == {t: "1" for t in want}, up
    ports = query(sm01, 'node_infiniband_symbol_error_total{host="gpu08"}')
    assert ports and {"rack", "cable", "leaf", "a_end", "b_end"} <= set(ports[0]["metric"]), ports
    # ib-health made the textfile directory EPEL's package does not and writes its metrics there
    deadline = time.monotonic() + 120
    while not query(sm01, 'cf_ib_sm_master{host="gpu08"}') and time.monotonic() < deadline:
        time.sleep(5)
    assert query(sm01, 'cf_ib_sm_master{host="gpu08"}')

    again = deploy_nodes(label, NODES, plan)
    assert sum(len(r["changes"]) for r in again.values()) == 0, again
    result = deploy_ansible(label, DeployRequest(stage=LabStage(labenv.paths(label).state_dir), limit=tuple(NODES)))
    assert result.exit_code == 0, [(r.name, r.error) for r in result.results]
    assert {r.name: r.status for r in result.results} == dict.fromkeys(NODES, "ok")
