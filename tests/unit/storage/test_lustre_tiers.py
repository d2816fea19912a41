"""The cache and archive tiers rendered from prod (render/lustre_tiers.py): the PCC unit on every client the
cache names, Lemur's agent and S3 mover on the declared agents, and where the mover finds its keys (a file's
path or the name of a variable: never a key)."""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from clusterforge.api import Checked, load_checked
from clusterforge.deploy.ansible import inventory, plain
from clusterforge.deploy.component import ManagedFile
from clusterforge.deploy.facts import FileFact, PackageFact
from clusterforge.deploy.ops import op_name
from clusterforge.deploy.packages import Pin
from clusterforge.render.core import render_environment

ROOT = Path(__file__).resolve().parents[3]


def test_pcc_on_every_compute_client(prod: Checked, files: dict[str, str]) -> None:
    (fs,) = prod.index.inv.lustre
    assert fs.pcc is not None
    compute = {n.name for n in prod.index.inv.nodes if n.role == "compute"}
    have = {p.split("/")[1] for p in files if p.endswith(f"/lustre-pcc-{fs.name}.service")}
    assert have == compute and {p.split("/")[1] for p in files if p.endswith("/mnt-pcc.mount")} == compute
    unit = files[f"hosts/{sorted(compute)[0]}/etc/systemd/system/lustre-pcc-{fs.name}.service"]
    exec_start = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    assert exec_start == (f'ExecStart=/usr/sbin/lctl pcc add {fs.mount} {fs.pcc.mount} --param '
                          f'"{fs.pcc.rule} rwid={fs.pcc.archive_id}"')
    assert f"After=lustre-{fs.name}.mount mnt-pcc.mount" in unit  # the file system and the cache mounted first
    mount = files[f"hosts/{sorted(compute)[0]}/etc/systemd/system/mnt-pcc.mount"]
    assert f"What={fs.pcc.block_device}" in mount and "Where=/mnt/pcc" in mount


def test_lemur_on_the_agents_with_the_keys_by_reference(prod: Checked, files: dict[str, str]) -> None:
    (fs,) = prod.index.inv.lustre
    hsm = fs.hsm
    assert hsm is not None
    agents = {p.split("/")[1] for p in files if p.endswith("/etc/lhsmd/agent")}
    assert agents == set(hsm.agents)
    for agent in hsm.agents:
        conf = files[f"hosts/{agent}/etc/lhsmd/lhsm-plugin-s3"]
        assert f'endpoint = "{hsm.endpoint}"' in conf and f'bucket = "{hsm.bucket}"' in conf
        assert re.search(rf"^  id = {hsm.archive_id}$", conf, re.M)
        nids = ":".join(prod.index.addresses.nids[0])
        assert f'client_device = "{nids}:/{fs.name}"' in files[f"hosts/{agent}/etc/lhsmd/agent"]
        dropin = files[f"hosts/{agent}/etc/systemd/system/lhsmd.service.d/clusterforge.conf"]
        assert f"Environment=AWS_SHARED_CREDENTIALS_FILE={hsm.credentials.file}" in dropin
        assert not any(k in conf.lower() for k in ("aws_access_key_id", "aws_secret_access_key"))


def test_credentials_in_an_environment_variable(tmp_path: Path) -> None:
    env = tmp_path / "prod"
    shutil.copytree(ROOT / "inventories" / "prod", env)
    services = env / "services.yaml"
    services.write_text(services.read_text().replace("credentials: {file: /etc/lustre/hsm-s3.cred}",
                                                     "credentials: {env: HSM_S3_CREDENTIALS}"))
    files = render_environment(load_checked(env).index, "prod")
    dropin = files["hosts/sm01/etc/systemd/system/lhsmd.service.d/clusterforge.conf"]
    assert "Environment=" not in dropin and "sets HSM_S3_CREDENTIALS" in dropin


def test_deploy_carries_the_tiers_and_the_servers_files_and_starts_only_the_clients(prod: Checked) -> None:
    """Both engines deploy the lustre component's files and start its services (one plan, docs/deploy.md): a
    client's LNet and mount start; its cache's units, a server's target mounts and its format step are files
    only (the site once the cache's file system exists, the HA manager, a person on purpose start them)."""
    from clusterforge.deploy.desired import host_plans
    from clusterforge.deploy.options import DeployOptions

    (fs,) = prod.index.inv.lustre
    plans = host_plans(prod.index, DeployOptions("prod"))
    gpu = next(n.name for n in prod.index.inv.nodes if n.role == "compute")
    lustre = plans[gpu].component("lustre")
    assert lustre is not None
    assert lustre.services == ("lnet", f"lustre-{fs.name}.mount")  # the cache's units: files only
    assert {"/etc/systemd/system/mnt-pcc.mount", f"/etc/systemd/system/lustre-pcc-{fs.name}.service"} <= {
        f.dest for f in lustre.files}
    assert plans[gpu].component("hsm") is None
    server = plans["lus01"].component("lustre")
    assert server is not None and server.services == () and server.pins == ()
    modes = {f.dest: f.mode for f in server.files}
    assert modes["/usr/local/lib/clusterforge/cf-lustre-format"] == 0o755
    assert "/etc/systemd/system/mnt-lustre-lfs01-OST0000.mount" in modes


def test_an_agent_gets_the_lustre_client_and_lemur_and_runs_lhsmd(prod: Checked) -> None:
    """An HSM agent that is no client (prod's SM nodes) gets LNet and the Lustre client (lhsmd mounts the file
    system itself), and the `hsm` component: Lemur's two packages at the pin, lhsmd's files, lhsmd enabled and
    started, and restarted (after a daemon-reload) when one of its files changes."""
    from clusterforge.deploy.changes import component_changes
    from clusterforge.deploy.desired import host_plans
    from clusterforge.deploy.facts import HostFacts
    from clusterforge.deploy.options import DeployOptions

    plans = host_plans(prod.index, DeployOptions("prod"))
    lustre = plans["sm01"].component("lustre")
    assert lustre is not None and lustre.services == ("lnet",)
    assert {p.package for p in lustre.pins} == {"lustre-client-utils", "lustre-client-modules-dkms"}
    assert {"/etc/lnet.conf", "/etc/modprobe.d/lustre.conf"} <= {f.dest for f in lustre.files}
    assert not any("lhsm" in f.dest for f in lustre.files)
    hsm = plans["sm01"].component("hsm")
    assert hsm is not None
    assert [(p.package, p.version, p.hold) for p in hsm.pins] == [
        ("lemur-hsm-agent", "0.6.0-1", True), ("lemur-data-movers", "0.6.0-1", True)]
    assert hsm.services == ("lhsmd",) and hsm.handler == "units"
    assert sorted(f.dest for f in hsm.files) == [
        "/etc/lhsmd/agent", "/etc/lhsmd/lhsm-plugin-s3", "/etc/systemd/system/lhsmd.service",
        "/etc/systemd/system/lhsmd.service.d/clusterforge.conf"]
    assert {f.unit for f in hsm.files} == {"lhsmd"}
    unit = next(f.content for f in hsm.files if f.dest.endswith("/lhsmd.service"))
    assert "ExecStart=/usr/sbin/lhsmd -config /etc/lhsmd/agent" in unit and "After=network-online.target lnet.service" \
        in unit and "RuntimeDirectory=lhsmd" in unit
    names = [c.name for c in plans["sm01"].components]
    assert names.index("lustre") < names.index("hsm")  # LNet is up before lhsmd starts
    # both engines, from this one plan: Ansible's hostvars for the cf_hsm role, pyinfra's named operations
    hv = plain(inventory([plans["sm01"]])["_meta"]["hostvars"]["sm01"])
    assert "hsm" in hv["cf_components"] and hv["cf_hsm_services"] == ["lhsmd"]
    assert [p["package"] for p in hv["cf_hsm_pins"]] == ["lemur-hsm-agent", "lemur-data-movers"]
    assert {(f["dest"], f["unit"], f["content"]) for f in hv["cf_hsm_files"]} == {
        (f.dest, "lhsmd", f.content) for f in hsm.files}
    assert op_name(hsm, "packages") == "hsm: packages (lemur-hsm-agent=0.6.0-1, lemur-data-movers=0.6.0-1)"
    assert op_name(hsm, "handler") == "hsm: restart or reload the services whose files changed"
    # a fresh host: everything; then only the agent's file changed: lhsmd restarted after a daemon-reload
    fresh = HostFacts(systemd=True)
    kinds = [(c.kind, c.target) for c in component_changes(hsm, fresh)]
    assert ("package", "lemur-hsm-agent") in kinds and ("service", "lhsmd") in kinds
    assert kinds[-1] == ("handler", "lhsmd")
    up = {"packages": _installed(hsm.pins), "services": {"lhsmd": ("enabled", "active")}, "systemd": True}
    assert component_changes(hsm, HostFacts(files=_have(hsm.files), **up)) == []  # converged: nothing
    agent_edited = HostFacts(files=_have([f for f in hsm.files if f.dest != "/etc/lhsmd/agent"]), **up)
    (change,) = component_changes(hsm, agent_edited)[1:]
    assert change.commands == ("systemctl restart lhsmd",)
    dropin_gone = HostFacts(files=_have([f for f in hsm.files if "service.d" not in f.dest]), **up)
    assert component_changes(hsm, dropin_gone)[-1].commands == ("systemctl daemon-reload", "systemctl restart lhsmd")


def _installed(pins: Iterable[Pin]) -> dict[str, PackageFact]:
    return {p.package: PackageFact(p.version, "hi ") for p in pins}


def _have(files: Iterable[ManagedFile]) -> dict[str, FileFact | None]:
    """What a host holds when these files are in place as the deploy writes them."""
    return {f.dest: FileFact(f.mode, hashlib.sha256(f.content.encode()).hexdigest(), f.content.encode())
            for f in files}
