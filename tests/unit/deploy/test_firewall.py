"""firewalld on EL hosts (#34): one service listing exactly the ports the host's components listen on, from the
model, added to the default zone when it changes, by the same script on both engines; Debian and Ubuntu hosts get
no firewall component; the file is never retired.

The script's branches are run by the real `sh` against stand-in `firewall-cmd` / `firewall-offline-cmd` programs
(constructed here: firewalld cannot run on this machine) that log how they were called."""

from __future__ import annotations

import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from cf_os_families import declare_os
from clusterforge.api import load_checked
from clusterforge.deploy.changes import component_changes
from clusterforge.deploy.component import HostPlan
from clusterforge.deploy.desired import host_plans
from clusterforge.deploy.facts import HostFacts
from clusterforge.deploy.firewall import OPEN_SCRIPT, SERVICE_FILE, firewall_component
from clusterforge.deploy.options import DeployOptions
from clusterforge.deploy.retire import retire_component

ROOT = Path(__file__).resolve().parents[3]


def _env(tmp_path: Path, releases: dict[str, str]) -> Path:
    env = tmp_path / "lab"
    shutil.copytree(ROOT / "inventories" / "lab", env)
    declare_os(env, releases)
    return env


def _plans(env: Path, components: tuple[str, ...] | None = None) -> dict[str, HostPlan]:
    return host_plans(load_checked(env).index, DeployOptions("lab", components=components))


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, HostPlan]:
    return _plans(_env(tmp_path_factory.mktemp("fw"), {"gpu02": "rocky9", "gpu01": "ubuntu2204"}))


def _ports(plan: HostPlan) -> list[tuple[str, str]]:
    wall = plan.component("firewall")
    assert wall is not None and len(wall.files) == 1 and wall.files[0].dest == SERVICE_FILE
    root = ET.fromstring(wall.files[0].content)  # well-formed: firewalld's reader would refuse it otherwise
    assert root.tag == "service" and root.findtext("short") == "clusterforge"
    return [(p.attrib["port"], p.attrib["protocol"]) for p in root.findall("port")]


def test_an_el_host_opens_exactly_what_its_components_listen_on(plans: dict[str, HostPlan]) -> None:
    el = plans["gpu02"]
    # the lab inventory: exporters collector (node_exporter), a GPU node (dcgm-exporter scraped by vmagent), the
    # health check through Slurm (slurmd's default SlurmdPort)
    assert _ports(el) == [("6818", "tcp"), ("9100", "tcp"), ("9400", "tcp")]
    listening = sorted(p for c in el.components for p, _ in c.ports)
    assert listening == ["6818/tcp", "9100/tcp", "9400/tcp"]
    assert el.components[-1].name == "firewall"  # after every component whose port it opens
    wall = el.component("firewall")
    assert wall is not None and wall.package_manager == "dnf" and wall.selinux  # restorecon'd like every EL file
    for host in ("gpu01", "gpu03", "sm01"):  # Ubuntu and Debian: no firewall is managed
        assert plans[host].component("firewall") is None, host


def test_the_ports_follow_the_model(tmp_path: Path) -> None:
    """The monitoring server's store and Alertmanager when it is the EL host; a site's SlurmdPort; a host with
    nothing listening keeps an empty service (what was opened is closed, a zone naming it still loads)."""
    env = _env(tmp_path, {"sm01": "rocky9", "gpu02": "rocky9"})
    services = env / "services.yaml"
    text = services.read_text()
    assert "health_check:\n" in text
    services.write_text(text.replace("health_check:\n", "health_check:\n  slurmd_port: 7003\n", 1))
    plans = _plans(env)
    assert ("7003", "tcp") in _ports(plans["gpu02"]) and ("6818", "tcp") not in _ports(plans["gpu02"])
    sm = _ports(plans["sm01"])
    assert ("8428", "tcp") in sm and ("9093", "tcp") in sm and ("9100", "tcp") in sm
    empty = firewall_component([], "lab", "/")
    assert ET.fromstring(empty.files[0].content).findall("port") == []
    assert "nothing (no port is opened)" in empty.files[0].content


def test_a_listening_component_brings_the_firewall_when_selected(tmp_path: Path) -> None:
    env = _env(tmp_path, {"gpu02": "rocky9"})
    only_mon = _plans(env, ("monitoring",))["gpu02"]
    assert [c.name for c in only_mon.components] == ["monitoring", "firewall"]
    only_nccl = _plans(env, ("nccl",))["gpu02"]
    assert [c.name for c in only_nccl.components] == ["nccl"]


def test_a_changed_service_file_adds_it_to_the_zone_and_a_converged_one_does_nothing(
        plans: dict[str, HostPlan]) -> None:
    wall = plans["gpu02"].component("firewall")
    assert wall is not None
    fresh = component_changes(wall, HostFacts(systemd=True))
    assert [(c.kind, c.target) for c in fresh] == [("file", SERVICE_FILE), ("handler", "firewalld")]
    assert fresh[-1].commands == (OPEN_SCRIPT,)
    ansible = yaml.safe_load((ROOT / "roles" / "cf_firewall" / "handlers" / "main.yml").read_text())
    assert [h["ansible.builtin.shell"]["cmd"] for h in ansible] == [OPEN_SCRIPT]  # both engines, one script


def test_the_service_file_is_never_retired(plans: dict[str, HostPlan]) -> None:
    el = plans["gpu02"]
    recorded = {"firewall": {"files": [SERVICE_FILE], "services": [], "holds": []}}
    bare = HostPlan(el.name, el.address, el.rack, el.role, (), el.reboot, el.os)
    retire = retire_component(bare, recorded, ["firewall"])
    assert retire is not None and SERVICE_FILE not in retire.remove and retire.retires == ("firewall",)


def _stub(bin_dir: Path, name: str, log: Path, rc: dict[str, int]) -> None:
    """A constructed stand-in program: logs its arguments; exits with rc[first argument] (default 0)."""
    cases = "".join(f'  "{arg}") echo "$0 $*" >> {log}; exit {code};;\n' for arg, code in rc.items())
    (bin_dir / name).write_text(f'#!/bin/sh\ncase "$2" in\n{cases}esac\necho "$0 $*" >> {log}\nexit 0\n')
    (bin_dir / name).chmod(0o755)


@pytest.mark.parametrize(("running", "offline", "queried", "want"), [
    (True, True, False, ["firewall-cmd -q --reload", "firewall-cmd -q --permanent --add-service=clusterforge",
                         "firewall-cmd -q --reload"]),
    (False, True, False, ["firewall-offline-cmd -q --query-service=clusterforge",
                          "firewall-offline-cmd -q --add-service=clusterforge"]),
    (False, True, True, ["firewall-offline-cmd -q --query-service=clusterforge"]),
    (False, False, False, []),
])
def test_the_script_adds_the_service_once_whether_firewalld_runs_or_not(
        tmp_path: Path, running: bool, offline: bool, queried: bool, want: list[str]) -> None:
    bin_dir, log = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    log.touch()
    # --state is the first argument of the state check (no -q): its exit says whether firewalld runs
    state = f'#!/bin/sh\n[ "$1" = --state ] && exit {0 if running else 252}\necho "firewall-cmd $*" >> {log}\n'
    (bin_dir / "firewall-cmd").write_text(state)
    (bin_dir / "firewall-cmd").chmod(0o755)
    if offline:
        _stub(bin_dir, "firewall-offline-cmd", log, {"--query-service=clusterforge": 0 if queried else 1})
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    if not offline:
        env["PATH"] = str(bin_dir) + ":/nonexistent"
    out = subprocess.run([shutil.which("sh") or "/bin/sh", "-c", OPEN_SCRIPT], env=env, capture_output=True,
                         text=True, timeout=30, check=False)
    assert out.returncode == 0, out.stderr
    calls = [os.path.basename(line.split(" ", 1)[0]) + " " + line.split(" ", 1)[1] for line in
             log.read_text().splitlines()]
    assert calls == want
    if not running and not offline:
        assert "firewalld is not installed" in out.stdout
