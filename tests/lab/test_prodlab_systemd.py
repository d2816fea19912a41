"""The default prod rehearsal on a systemd lab (what `make deploy ENV=prod LAB=1` does): a GPU rack, both
SM nodes and one Lustre server in containers with systemd as PID 1, the whole prod fabric simulated. The
deploy (pyinfra, then Ansible on fresh containers) enables and starts its units: the OpenSM HA pair comes
up master (priority 15) and standby (14) as `sminfo` shows from a GPU node, persistenced, fabricmanager,
openibd, LNet (lnet.service, reading the deployed /etc/lnet.conf) and the Lustre mount are active; the second
run changes nothing; validate is clean. A broken /etc/lnet.conf fails lnet.service (`lab services` names it)
and the next deploy puts the file back and starts it. A systemd lab the inotify limit cannot hold is refused
before anything starts.

A copy of inventories/prod (`prodsd`) on its own free /20 and lab root. Run under `flock /tmp/cf-lab.lock`.
About 2 minutes (marked long: `make test-long`, which CI runs too).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from cf_lab_net import cf, free_block, lab_copy
from clusterforge.api import load_checked
from clusterforge.deploy.ansible_api import deploy_ansible
from clusterforge.deploy.api import DeployRequest
from clusterforge.lab import ssh_command
from clusterforge.lab.proc import run
from clusterforge.rehearsal import env as labenv
from clusterforge.rehearsal import services as labservices
from clusterforge.rehearsal.stage import LabStage

ROOT = Path(__file__).resolve().parents[2]
NODES = ["gpu0001", "gpu0002", "gpu0003", "gpu0004", "sm01", "sm02", "lus01"]
pytestmark = [pytest.mark.lab, pytest.mark.long]


@pytest.fixture(scope="module")
def prodsd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with lab_copy(tmp_path_factory, ROOT / "inventories" / "prod", "prodsd", "--systemd", "--no-start-sm", "--cidr",
                  free_block()) as env:
        yield env


def _services(env: Path) -> dict[str, object]:
    code, out = cf("lab", "services", str(env), "--format", "json")
    data: dict[str, object] = json.loads(out[out.index("{"):])
    data["exit"] = code
    return data


def _opensm_started_us(state: labenv.LabState, host: str) -> int:
    """When opensm.service became active on `host`, in microseconds of CLOCK_MONOTONIC (one clock for every
    container: they share the machine's kernel)."""
    out = run(ssh_command(state, host, ["systemctl", "show", "-p", "ActiveEnterTimestampMonotonic", "--value",
                                        "opensm"]), timeout=60).stdout.strip()
    return int(out)


def _master_started_first(state: labenv.LabState) -> None:
    """Issue 21.7: the deploy starts sm01's OpenSM (priority 15), waits for a MASTER, then sm02's."""
    top, standby = _opensm_started_us(state, "sm01"), _opensm_started_us(state, "sm02")
    assert 0 < top < standby, (top, standby)


def test_the_deploy_starts_its_units_and_the_sm_pair_elects(prodsd: Path, tmp_path: Path) -> None:
    state = labenv.running(prodsd)
    assert state is not None and sorted(state.hosts) == sorted(NODES)
    pid1 = run(ssh_command(state, "gpu0001", ["cat", "/proc/1/comm"]), timeout=60).stdout.strip()
    assert pid1 == "systemd"
    before = _services(prodsd)
    assert before["exit"] == 1  # nothing enabled yet, no SM: not ok
    plan = tmp_path / "result.json"
    code, out = cf("deploy", str(prodsd), "--no-diffs", "--plan-file", str(plan))
    assert code == 0, out
    hosts = json.loads(plan.read_text())["hosts"]
    assert "no systemd" not in out
    started = {(h, c["target"]) for h, r in hosts.items() for c in r["changes"] if c["kind"] == "service"}
    assert {("sm01", "opensm"), ("sm02", "opensm"), ("gpu0001", "nvidia-persistenced"), ("gpu0001", "lnet"),
            ("gpu0001", "lustre-lfs01.mount"), ("lus01", "openibd"), ("sm01", "lnet"), ("sm01", "lhsmd"),
            ("sm02", "lhsmd")} <= started
    assert ("lus01", "lnet") not in started  # a Lustre server's packages (and so its LNet unit) are not deployed
    after = _services(prodsd)
    assert after["exit"] == 0, after
    units = after["units"]
    assert isinstance(units, list) and all(u["active"] == "active" for u in units)
    expected = labservices.managed_units(load_checked(prodsd))
    assert sorted((u["host"], u["unit"]) for u in units) == sorted((h, u) for h in NODES for u in expected[h])
    # LNet on the clients and on the HSM agents (prod's SM nodes: lhsmd mounts the file system itself)
    assert {u["host"] for u in units if u["unit"] == "lnet"} == {"gpu0001", "gpu0002", "gpu0003", "gpu0004", "sm01",
                                                                  "sm02"}
    # the copytool: Lemur's pinned packages (LAB-ONLY stand-ins), lhsmd reading the deployed configuration
    lhsmd = run(ssh_command(state, "sm02", ["sh", "-c", "dpkg-query -W -f='${Package} ${Version}\\n' lemur-hsm-agent "
                                            "lemur-data-movers; apt-mark showhold; journalctl -u lhsmd --no-pager"]),
                timeout=60).stdout
    lines = set(lhsmd.splitlines())  # installed at the pin, and held
    assert {"lemur-hsm-agent 0.6.0-1", "lemur-data-movers 0.6.0-1", "lemur-hsm-agent", "lemur-data-movers"} <= lines
    assert "lhsmd (LAB-ONLY stand-in): 10.100." in lhsmd and "@o2ib0:/lfs01 with lhsm-plugin-s3" in lhsmd
    # the LAB-ONLY lnet.service read the deployed /etc/lnet.conf (prod's o2ib0 on ib0) before the mount started
    lnet = run(ssh_command(state, "gpu0004", ["sh", "-c", "cat /run/clusterforge-lab-lnet/nets; systemctl show "
                                              "-p After --value lustre-lfs01.mount"]), timeout=60).stdout
    assert lnet.startswith("o2ib0(ib0)\n") and "lnet.service" in lnet.split("\n", 1)[1]
    sms = after["subnet_managers"]
    assert sms == {"sm01": "priority 15 state 3 SMINFO_MASTER", "sm02": "priority 14 state 2 SMINFO_STANDBY"}
    _master_started_first(state)
    master = run(ssh_command(state, "gpu0003", ["sminfo"]), timeout=60).stdout
    assert "priority 15" in master and "SMINFO_MASTER" in master
    mount = run(ssh_command(state, "gpu0002", ["cat", "/lustre/lfs01/CLUSTERFORGE-LAB-STAND-IN"]), timeout=60)
    # the MGS NID (prod's lus01 IPoIB address) is written into the unit, never contacted: the stand-in mounts a tmpfs
    assert mount.stdout.startswith("LAB-ONLY stand-in for Lustre 10.100.")
    assert "@o2ib0:/lfs01: an empty tmpfs" in mount.stdout
    code, out = cf("deploy", str(prodsd), "--no-diffs", "--plan-file", str(plan))
    assert code == 0, out
    assert sum(len(r["changes"]) for r in json.loads(plan.read_text())["hosts"].values()) == 0
    code, out = cf("validate", str(prodsd))
    assert code == 0 and "clean" in out, out


def test_a_broken_lnet_conf_fails_lnet_and_the_deploy_repairs_it(prodsd: Path, tmp_path: Path) -> None:
    state = labenv.running(prodsd)
    assert state is not None
    broken = run(ssh_command(state, "gpu0002", ["sh", "-c", "printf 'net:\\n    - net type: ib0\\n' > "
                                                "/etc/lnet.conf; systemctl restart lnet; echo rc=$?"]),
                 timeout=60, check=False).stdout
    assert "rc=1" in broken, broken
    bad = _services(prodsd)
    assert bad["exit"] == 1
    units = bad["units"]
    assert isinstance(units, list)
    assert [(u["host"], u["unit"], u["active"]) for u in units if u["active"] != "active"] == \
        [("gpu0002", "lnet", "failed")]
    journal = run(ssh_command(state, "gpu0002", ["journalctl", "-u", "lnet", "--no-pager", "-n", "5"]),
                  timeout=60).stdout
    assert "/etc/lnet.conf line 2: net type 'ib0' is not o2ibN, tcpN or lo" in journal
    plan = tmp_path / "result.json"
    code, out = cf("deploy", str(prodsd), "--limit", "gpu0002", "--no-diffs", "--plan-file", str(plan))
    assert code == 0, out
    changes = json.loads(plan.read_text())["hosts"]["gpu0002"]["changes"]
    assert [(c["kind"], c["target"]) for c in changes if c["kind"] != "handler"] == \
        [("file", "/etc/lnet.conf"), ("service", "lnet")]
    assert _services(prodsd)["exit"] == 0


def _agent_state(state: labenv.LabState) -> dict[str, str]:
    """sm02's copytool and LNet as systemd sees them (`none`: no unit file), lhsmd's files, the holds."""
    script = ("for u in lhsmd lnet; do echo \"$u|$(systemctl is-enabled $u 2>/dev/null)|$(systemctl is-active $u "
              "2>/dev/null)\"; done; echo \"files|$(ls /etc/lhsmd 2>/dev/null | tr '\\n' ' ')\"; "
              "echo \"held|$(apt-mark showhold | tr '\\n' ' ')\"")
    out = run(ssh_command(state, "sm02", ["sh", "-c", script]), timeout=60).stdout
    rows = [line.split("|") for line in out.splitlines() if "|" in line]
    return {r[0]: " ".join(x.strip() or "none" for x in r[1:]) if r[0] in ("lhsmd", "lnet") else r[1].strip()
            for r in rows}


def test_an_hsm_agent_no_more_is_retired_by_either_engine(prodsd: Path, tmp_path: Path) -> None:
    """sm02 stops being an HSM agent: its deploy retires what the lab's deploy record says the hsm and lustre
    components put there (deploy/retire.py): lhsmd and the LNet it needed stopped and disabled, their files
    removed, the holds released; Ansible (cf_retire) first, then, the agent back and deployed again, pyinfra.
    The record forgets what was retired: the next run has nothing to do."""
    state = labenv.running(prodsd)
    assert state is not None
    services = prodsd / "services.yaml"
    original = services.read_text()
    assert _agent_state(state)["lhsmd"] == "enabled active"
    plan = tmp_path / "result.json"
    try:
        for engine in ("ansible", "pyinfra"):
            services.write_text(original.replace("agents: [sm01, sm02]", "agents: [sm01]"))
            code, out = cf("deploy", str(prodsd), "--engine", engine, "--limit", "sm02", "--no-diffs")
            assert code == 0, out
            now = _agent_state(state)
            assert now["lhsmd"] == "none inactive" and now["lnet"] == "disabled inactive", (engine, now)
            assert now["files"] == "" and "lemur-hsm-agent" not in now["held"], (engine, now)
            assert "lustre-client-utils" not in now["held"] and "doca-ofed" in now["held"], (engine, now)
            record = json.loads((labenv.paths(prodsd).state_dir / "applied.json").read_text())["hosts"]["sm02"]
            assert not {"hsm", "lustre", "retire"} & set(record["components"]), (engine, record)
            code, out = cf("deploy", str(prodsd), "--limit", "sm02", "--no-diffs", "--plan-file", str(plan))
            assert code == 0 and json.loads(plan.read_text())["hosts"]["sm02"]["changes"] == [], out
            services.write_text(original)  # an agent again: pyinfra puts it all back
            code, out = cf("deploy", str(prodsd), "--limit", "sm02", "--no-diffs")
            assert code == 0, out
            assert _agent_state(state)["lhsmd"] == "enabled active", engine
    finally:
        services.write_text(original)


@pytest.mark.long
def test_ansible_on_fresh_containers_reaches_the_same_state(prodsd: Path) -> None:
    state = labenv.running(prodsd)
    assert state is not None
    cidr = state.network_cidr
    code, out = cf("lab", "down", str(prodsd))  # fresh containers: the deploy starts from the image again
    assert code == 0, out
    code, out = cf("lab", "up", str(prodsd), "--systemd", "--no-start-sm", "--cidr", cidr)
    assert code == 0, out
    result = deploy_ansible(prodsd, DeployRequest(stage=LabStage(labenv.paths(prodsd).state_dir)))
    assert result.exit_code == 0, [(r.name, r.error) for r in result.results]
    assert sorted(r.name for r in result.results) == sorted(NODES)
    after = _services(prodsd)
    assert after["exit"] == 0, after
    assert after["subnet_managers"] == {"sm01": "priority 15 state 3 SMINFO_MASTER",
                                        "sm02": "priority 14 state 2 SMINFO_STANDBY"}
    _master_started_first(labenv.running(prodsd))  # type: ignore[arg-type]
    code, out = cf("deploy", str(prodsd), "--no-diffs")  # pyinfra after Ansible: nothing to do
    assert code == 0, out
    assert "7 host(s), 0 change(s)" in out


def _podman_names(kind: str) -> set[str]:
    out = run(["podman", kind, "ls", "--format", "{{.Name}}"] if kind == "network"
              else ["podman", "ps", "-a", "--format", "{{.Names}}"], timeout=60).stdout
    return set(out.split())


def test_a_systemd_lab_the_inotify_limit_cannot_hold_is_refused_before_anything_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What `make deploy` meets on a machine without inotify room for the lab inventory's 11 systemd containers:
    the limit is read from a file standing in for /proc/sys/fs/inotify/max_user_instances (this machine's is not
    changed by a test); the refusal names the sysctl, and no container, network or lab is left."""
    from clusterforge.lab import inotify

    env = tmp_path / "labroom"
    shutil.copytree(ROOT / "inventories" / "lab", env)
    monkeypatch.setenv("CLUSTERFORGE_LAB_ROOT", str(tmp_path / "state"))
    limit = tmp_path / "max_user_instances"
    limit.write_text("20\n")  # room for two systemd containers
    monkeypatch.setattr(inotify, "INOTIFY_LIMIT", limit)
    containers, networks = _podman_names("container"), _podman_names("network")
    code, out = cf("lab", "up", str(env), "--systemd", "--no-start-sm", "--cidr", free_block(24))
    try:
        assert code == 1, out
        assert "a systemd lab of 11 containers needs about 77 inotify instances" in out
        assert "fs.inotify.max_user_instances is 20" in out and "Nothing was started" in out
        assert "sysctl -w fs.inotify.max_user_instances=1024" in out and "Traceback" not in out
        assert labenv.running(env) is None
        assert not any("labroom" in n for n in _podman_names("container") - containers)
        assert _podman_names("container") <= containers and _podman_names("network") <= networks
    finally:
        cf("lab", "down", str(env))
