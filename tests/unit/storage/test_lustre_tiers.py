"""The cache and archive tiers rendered from prod (render/lustre_tiers.py): the PCC unit on every client the
cache names, Lemur's agent and S3 mover on the declared agents, and where the mover finds its keys (a file's
path or the name of a variable: never a key)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from clusterforge.api import Checked, load_checked
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
    client's LNet and mount start; its cache's units, a server's target mounts, its format step and an agent's
    lhsmd are files only (the site once the cache's file system exists, the HA manager, a person on purpose,
    the copytool's package start them)."""
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
    server = plans["lus01"].component("lustre")
    assert server is not None and server.services == () and server.pins == ()
    modes = {f.dest: f.mode for f in server.files}
    assert modes["/usr/local/lib/clusterforge/cf-lustre-format"] == 0o755
    assert "/etc/systemd/system/mnt-lustre-lfs01-OST0000.mount" in modes
    agent = plans["sm01"].component("lustre")
    assert agent is not None and agent.services == ()
    assert {"/etc/lhsmd/agent", "/etc/lhsmd/lhsm-plugin-s3"} <= {f.dest for f in agent.files}
