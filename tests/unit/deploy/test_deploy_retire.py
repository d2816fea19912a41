"""What a host was deployed and no longer wants, retired (deploy/retire.py): from the deploy record's owned
names, against the host's whole desired state now; the commands from the host's facts; the record after."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from clusterforge.api import load_checked
from clusterforge.deploy.ansible import inventory, plain
from clusterforge.deploy.api import DeployRequest, plans_for, with_retire
from clusterforge.deploy.changes import component_changes
from clusterforge.deploy.component import RETIRE, HostPlan
from clusterforge.deploy.desired import COMPONENTS
from clusterforge.deploy.facts import FileFact, HostFacts, PackageFact
from clusterforge.deploy.ops import op_name
from clusterforge.deploy.record import RECORD_FILE, read_record, update_record
from clusterforge.deploy.retire import retire_component
from clusterforge.deploy.runner import HostResult, probe_args

ROOT = Path(__file__).resolve().parents[3]
PROD = ROOT / "inventories" / "prod"


def _whole(env: Path) -> dict[str, HostPlan]:
    return plans_for(env, DeployRequest(), None, load_checked(env).index, whole=True)


def _ids(plans: dict[str, HostPlan]) -> dict[str, str]:
    return {n: f"ssh:{p.address}" for n, p in plans.items()}


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """prod deployed whole (the record of it), and a copy of prod in which sm02 is no HSM agent any more."""
    tmp = tmp_path_factory.mktemp("retire")
    record = tmp / "record"
    plans = _whole(PROD)
    update_record(record, plans.values(), [HostResult(n, "changed") for n in plans], engine="pyinfra", env=PROD,
                  targets=_ids(plans))
    env = tmp / "prod"
    shutil.copytree(PROD, env)
    services = env / "services.yaml"
    services.write_text(services.read_text().replace("agents: [sm01, sm02]", "agents: [sm01]"))
    return record, env


def test_an_agent_that_is_one_no_more_retires_lhsmd_then_lnet(deployed: tuple[Path, Path]) -> None:
    record, env = deployed
    plans = _whole(env)
    on_record = read_record(record)
    out = {p.name: p for p in with_retire(list(plans.values()), DeployRequest(record_dir=record), _ids(plans),
                                          on_record)}
    retire = out["sm02"].components[0]
    assert retire.name == RETIRE and out["sm02"].component("hsm") is None
    assert retire.stop == ("lhsmd", "lnet")  # the copytool before the LNet it mounts through
    assert set(retire.remove) == {"/etc/lhsmd/agent", "/etc/lhsmd/lhsm-plugin-s3", "/etc/systemd/system/lhsmd.service",
                                  "/etc/systemd/system/lhsmd.service.d/clusterforge.conf", "/etc/lnet.conf",
                                  "/etc/modprobe.d/lustre.conf"}
    assert set(retire.unhold) == {"lemur-hsm-agent", "lemur-data-movers", "lustre-client-utils",
                                  "lustre-client-modules-dkms"}
    assert set(retire.retires) == {"hsm", "lustre"}
    assert all(p.components[0].name != RETIRE for n, p in out.items() if n != "sm02")  # nobody else
    # --component hsm: only what hsm owned; the Lustre client stays until the lustre component is named
    only = {p.name: p for p in with_retire(list(plans.values()), DeployRequest(record_dir=record, components=("hsm",)),
                                           _ids(plans), on_record)}
    (hsm_only,) = only["sm02"].components
    assert hsm_only.stop == ("lhsmd",) and hsm_only.retires == ("hsm",) and "/etc/lnet.conf" not in hsm_only.remove
    # no record for the host (another target: a re-created container): nothing to retire
    fresh = with_retire([plans["sm02"]], DeployRequest(record_dir=record), {"sm02": "lab:new-container"}, on_record)
    assert [c.name for c in fresh[0].components][:1] != [RETIRE]


def test_commands_follow_the_hosts_facts(deployed: tuple[Path, Path]) -> None:
    record, env = deployed
    plans = _whole(env)
    (sm02,) = with_retire([plans["sm02"]], DeployRequest(record_dir=record), _ids(plans), read_record(record))
    retire = sm02.components[0]
    probe = probe_args(sm02)
    assert {"lhsmd", "lnet"} <= set(probe["services"]) and "/etc/lhsmd/agent" in probe["secret_files"]
    assert "lemur-hsm-agent" in probe["packages"]
    there = FileFact(0o644, hashlib.sha256(b"x").hexdigest(), None)
    facts = HostFacts(systemd=True, services={"lhsmd": ("enabled", "active"), "lnet": ("enabled", "active")},
                      files=dict.fromkeys(retire.remove, there),
                      packages={p: PackageFact("1", "hi ") for p in retire.unhold})
    changes = component_changes(retire, facts)
    commands = [cmd for c in changes for cmd in c.commands]
    assert commands[:2] == ["systemctl disable --now lhsmd", "systemctl disable --now lnet"]
    assert "rm -f /etc/systemd/system/lhsmd.service" in commands and commands[-1] == "systemctl daemon-reload"
    (unhold,) = [c for c in commands if c.startswith("apt-mark unhold ")]
    assert set(unhold.split()[2:]) == set(retire.unhold)
    # retired already: nothing; a failed unit is still disabled; a host without systemd: files and holds only
    assert component_changes(retire, HostFacts(systemd=True, services={"lhsmd": ("disabled", "inactive")})) == []
    failed = component_changes(retire, HostFacts(systemd=True, services={"lnet": ("disabled", "failed")}))
    assert [c.commands for c in failed] == [("systemctl disable --now lnet",)]
    assert [c.kind for c in component_changes(retire, HostFacts(files={"/etc/lnet.conf": there}))] == ["file"]
    # both engines: pyinfra's one named operation, Ansible's cf_retire variables
    assert (op_name(retire, "retire") or "").startswith("retire: stop lhsmd, stop lnet, remove ")
    assert op_name(retire, "files") is None
    hv = plain(inventory([sm02])["_meta"]["hostvars"]["sm02"])
    assert hv["cf_components"][0] == "retire" and hv["cf_retire_stop"] == ["lhsmd", "lnet"]
    assert set(hv["cf_retire_remove"]) == set(retire.remove) and set(hv["cf_retire_unhold"]) == set(retire.unhold)


def test_the_record_forgets_what_was_retired(deployed: tuple[Path, Path], tmp_path: Path) -> None:
    record, env = deployed
    copy = tmp_path / "record"
    shutil.copytree(record, copy)
    plans = _whole(env)
    ids = _ids(plans)
    (sm02,) = with_retire([plans["sm02"]], DeployRequest(record_dir=copy), ids, read_record(copy))
    before = read_record(copy)["sm02"]["components"]
    assert {"hsm", "lustre"} <= set(before) and before["hsm"]["services"] == ["lhsmd"]
    update_record(copy, [sm02], [HostResult("sm02", "changed")], engine="pyinfra", env=env, targets=ids)
    after = read_record(copy)["sm02"]["components"]
    assert "hsm" not in after and "lustre" not in after and "retire" not in after and "opensm" in after
    # the next run has nothing left to retire
    (again,) = with_retire([plans["sm02"]], DeployRequest(record_dir=copy), ids, read_record(copy))
    assert again.components[0].name != RETIRE


def test_what_the_record_cannot_vouch_for_is_never_retired() -> None:
    """A version 1 entry (a digest only) owns nothing by name; a path that is not absolute and normal (or is
    `/`) is not removed, whatever the record says."""
    plan = HostPlan("h", "a", "r", "compute", ())
    assert retire_component(plan, {"lustre": "0" * 32}, COMPONENTS) is None
    odd = {"lustre": {"digest": "x", "services": [], "holds": [],
                      "files": ["/", "etc/x", "/etc/../root/.ssh/authorized_keys", "/etc//x", "/etc/lnet.conf"]}}
    retire = retire_component(plan, odd, COMPONENTS)
    assert retire is not None and retire.remove == ("/etc/lnet.conf",)


def test_a_version_1_record_still_reads(tmp_path: Path) -> None:
    (tmp_path / RECORD_FILE).write_text('{"version": 1, "env": "lab", "hosts": {"gpu01": {"target": "ssh:x", '
                                        '"components": {"base": "' + "0" * 32 + '"}}}}\n')
    assert read_record(tmp_path)["gpu01"]["components"] == {"base": "0" * 32}
