"""The monitoring component on a systemd lab (issue #11): a GPU node and the monitoring server sm01 of the lab
inventory in containers with systemd as PID 1. pyinfra installs the real Debian node_exporter, VictoriaMetrics
(vmagent, vmalert) and Alertmanager from the lab repository and the LAB-ONLY dcgm-exporter stand-in, enables
and starts every unit (`lab services`); vmagent scrapes node_exporter (reading the stand-in sysfs tree through
the OFED stand-in's drop-in) and the dcgm-exporter stand-in of every lab container, all `up`, the series
labelled host/rack/u and, for an HCA port, its cable, leaf and ends; a second run changes nothing, nor does
Ansible after it (both engines write the same bytes); a changed rules.yml only reloads vmalert.

A copy of inventories/lab on its own free /24 and lab root. Run under `flock /tmp/cf-lab.lock`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cf_lab_monitoring import deploy_nodes, query
from cf_lab_net import cf, free_block, lab_copy
from clusterforge.deploy.ansible_api import deploy_ansible
from clusterforge.deploy.api import DeployRequest
from clusterforge.lab import ssh_command
from clusterforge.lab.proc import run
from clusterforge.rehearsal import env as labenv
from clusterforge.rehearsal.stage import LabStage

ROOT = Path(__file__).resolve().parents[2]
NODES = ["gpu01", "sm01"]
pytestmark = [pytest.mark.lab, pytest.mark.long]


def _own_network(env: Path) -> None:
    """The copy's management network moved to a free /24, so that the names the rendered scrape config uses
    resolve (through the deployed /etc/hosts) to this lab's containers, as on the lab inventory's own lab."""
    net = free_block(24).rsplit(".", 1)[0] + "."
    for f in env.glob("*.yaml"):
        f.write_text(f.read_text().replace("198.18.10.", net))


@pytest.fixture(scope="module")
def labmon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with lab_copy(tmp_path_factory, ROOT / "inventories" / "lab", "labmon", "--systemd", "--limit", ",".join(NODES),
                  edit=_own_network) as env:
        yield env


def test_monitoring_deploys_scrapes_and_converges(labmon: Path, tmp_path: Path) -> None:
    state = labenv.running(labmon)
    assert state is not None and sorted(state.hosts) == sorted(NODES)
    plan = tmp_path / "result.json"
    hosts = deploy_nodes(labmon, NODES, plan)
    started = {(h, c["target"]) for h, r in hosts.items() for c in r["changes"]
               if c["component"] == "monitoring" and c["kind"] == "service"}
    assert {("gpu01", "prometheus-node-exporter"), ("gpu01", "dcgm-exporter"), ("sm01", "victoria-metrics"),
            ("sm01", "prometheus-alertmanager"), ("sm01", "clusterforge-vmagent"), ("sm01", "clusterforge-vmalert"),
            ("sm01", "clusterforge-drain-hook")} <= started
    code, out = cf("lab", "services", str(labmon), "--format", "json")
    services = json.loads(out[out.index("{"):])
    assert code == 0, out
    units = {(u["host"], u["unit"]): u["active"] for u in services["units"]}
    assert units[("sm01", "clusterforge-vmagent")] == units[("gpu01", "dcgm-exporter")] == "active"
    assert all(a == "active" for a in units.values()), units

    # every scrape target of a lab container is up: node_exporter on both, the dcgm-exporter stand-in on gpu01
    sm01 = state.hosts["sm01"].address
    want = {("node/gpu01", "gpu01:9100"), ("node/sm01", "sm01:9100"), ("dcgm/gpu01", "gpu01:9400")}
    deadline = time.monotonic() + 90
    while True:
        up = {(r["metric"].get("job"), r["metric"].get("instance")): r["value"][1]
              for r in query(sm01, "up") if r["metric"].get("host") in NODES}
        if all(up.get(t) == "1" for t in want) or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert {t: up.get(t) for t in want} == {t: "1" for t in want}, up
    # node_exporter read the stand-in sysfs tree (the OFED stand-in's --path.sysfs drop-in), labelled from the model
    ports = query(sm01, 'node_infiniband_symbol_error_total{host="gpu01"}')
    assert {r["metric"]["device"] for r in ports} == {"mlx5_0", "mlx5_1"}
    labels = ports[0]["metric"]
    assert {"rack", "u", "cable", "leaf", "leaf_port", "a_end", "b_end"} <= set(labels)
    assert labels["rack"] == "lab-su01-r01" and labels["cable"].startswith("C-")
    gpus = query(sm01, 'DCGM_FI_DEV_MEMORY_TEMP{host="gpu01"}')
    assert len(gpus) == 8 and {g["metric"]["rack"] for g in gpus} == {"lab-su01-r01"}

    # converged: a second pyinfra run changes nothing, nor does Ansible after it (the same bytes and units)
    again = deploy_nodes(labmon, NODES, plan)
    assert sum(len(r["changes"]) for r in again.values()) == 0, again
    result = deploy_ansible(labmon, DeployRequest(stage=LabStage(labenv.paths(labmon).state_dir),
                                                  limit=tuple(NODES)))
    assert result.exit_code == 0, [(r.name, r.error) for r in result.results]
    assert {r.name: r.status for r in result.results} == {"gpu01": "ok", "sm01": "ok"}

    # a changed rules.yml reloads vmalert only (SIGHUP re-reads the rules): the same main PID before and after
    def vmalert_pid() -> str:
        return run(ssh_command(state, "sm01", ["systemctl", "show", "-p", "MainPID", "--value",
                                               "clusterforge-vmalert"]), timeout=60).stdout.strip()

    pid = vmalert_pid()
    run(ssh_command(state, "sm01", ["sh", "-c", "echo '# local edit' >> /etc/clusterforge/monitoring/rules.yml"]),
        timeout=60)
    fixed = deploy_nodes(labmon, NODES, plan)
    changes = [(c["kind"], c["target"], c["detail"]) for c in fixed["sm01"]["changes"]]
    assert changes == [("file", "/etc/clusterforge/monitoring/rules.yml", "update content"),
                       ("handler", "clusterforge-vmalert", "reload clusterforge-vmalert")], changes
    assert fixed["gpu01"]["changes"] == []
    assert vmalert_pid() == pid
