"""What should be on each host, from the lab inventory (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.api import Checked
from clusterforge.catalog.compat import lustre_ofed_problem
from clusterforge.deploy.api import DeployError, select_hosts
from clusterforge.deploy.component import HostPlan
from clusterforge.deploy.desired import host_plans, merge_block
from clusterforge.deploy.options import DeployOptions, Mirror, read_repo_auth
from clusterforge.render import render_environment


def _names(plan: HostPlan) -> list[str]:
    return [c.name for c in plan.components]


def test_components_follow_roles_and_hardware(plans: dict[str, HostPlan]) -> None:
    # every node of an inventory with a `monitoring` section gets its collector (the lab: every node)
    assert _names(plans["gpu01"]) == ["repo", "base", "ofed", "nvidia", "nccl", "lustre", "ipoib", "monitoring",
                                      "healthcheck"]  # compute nodes: Slurm's health check
    assert _names(plans["sm01"]) == ["repo", "base", "ofed", "ipoib", "opensm", "monitoring"]
    assert _names(plans["lus01"]) == ["repo", "base", "ofed", "lustre", "ipoib", "monitoring"]


def test_nvswitch_nodes_get_fabricmanager_of_the_driver_version(plans: dict[str, HostPlan]) -> None:
    nvidia = plans["gpu01"].component("nvidia")
    assert nvidia is not None
    assert {p.package: p.version for p in nvidia.pins} == {"nvidia-driver-550": "550.90.07-1",
                                                           "nvidia-fabricmanager-550": "550.90.07-1"}
    assert "nvidia-fabricmanager" in nvidia.services


def test_rendered_files_are_deployed_byte_for_byte(checked: Checked, plans: dict[str, HostPlan]) -> None:
    rendered = render_environment(checked.index, "lab")
    by_dest = {f.dest: f.content for f in plans["sm01"].files}
    assert by_dest["/etc/opensm/opensm.conf"] == rendered["opensm/sm01/opensm.conf"]
    assert by_dest["/etc/opensm/partitions.conf"] == rendered["opensm/sm01/partitions.conf"]
    gpu = {f.dest: f for f in plans["gpu01"].files}
    assert gpu["/etc/nccl.conf"].content == rendered["hosts/gpu01/etc/nccl.conf"]
    assert gpu["/etc/netplan/60-clusterforge-ipoib.yaml"].mode == 0o600
    # a script's banner follows its #! line (ib-health, cf-nodecheck); JSON has no comments
    assert all(f.content.removeprefix("#!/usr/bin/python3\n").startswith("# Managed by clusterforge")
               for f in plans["gpu01"].files if not f.block and not f.dest.endswith(".json"))
    # the health check: the script (executable), its Slurm lines and the node's expectations, as rendered
    check = gpu["/usr/local/lib/clusterforge/cf-nodecheck"]
    assert check.content == rendered["slurm/nodes/usr/local/lib/clusterforge/cf-nodecheck"] and check.mode == 0o755
    assert gpu["/etc/slurm/clusterforge-healthcheck.conf"].content == rendered["slurm/healthcheck.conf"]
    assert gpu["/etc/clusterforge/nodecheck.json"].content == rendered["hosts/gpu01/etc/clusterforge/nodecheck.json"]


def test_lustre_clients_only_get_packages_and_the_pair_is_checked(plans: dict[str, HostPlan]) -> None:
    client, server = plans["gpu01"].component("lustre"), plans["lus01"].component("lustre")
    assert client is not None and server is not None
    assert client.pins and not server.pins and not client.problems
    assert lustre_ofed_problem("24.04-0.7.0.0", "2.15.5") is None
    assert "not known to work" in (lustre_ofed_problem("24.04-0.7.0.0", "2.14.0") or "")
    assert "not in the OFED/Lustre compatibility table" in (lustre_ofed_problem("9.9-1", "2.15.5") or "")
    assert "o2ib needs OFED" in (lustre_ofed_problem(None, "2.15.5") or "")


def test_lustre_clients_start_lnet_before_their_mounts(plans: dict[str, HostPlan]) -> None:
    client, server = plans["gpu01"].component("lustre"), plans["lus01"].component("lustre")
    assert client is not None and server is not None
    # lnet.service (lustre-client-utils) imports the deployed /etc/lnet.conf; the mounts come after it
    assert client.services == ("lnet", "lustre-lfs01.mount")
    assert "/etc/lnet.conf" in {f.dest for f in client.files}
    mount = next(f for f in client.files if f.dest.endswith(".mount"))
    assert "After=network-online.target lnet.service" in mount.content.splitlines()
    # the server's Lustre packages are not deployed, so neither is its LNet unit
    assert server.services == () and "/etc/lnet.conf" in {f.dest for f in server.files}
    lustre = {n: c for n, p in plans.items() if (c := p.component("lustre")) is not None}
    with_lnet = sorted(n for n, c in lustre.items() if "lnet" in c.services)
    assert with_lnet == sorted(n for n, c in lustre.items() if any(f.dest.endswith(".mount") for f in c.files))
    assert "gpu01" in with_lnet and "lus01" not in with_lnet


def test_root_prefix_and_component_filter(checked: Checked) -> None:
    plans = host_plans(checked.index, DeployOptions("lab", root="/tmp/x/", components=("nccl",)))
    assert [f.dest for f in plans["gpu01"].files] == ["/tmp/x/etc/nccl.conf"]


def test_hosts_block_is_what_blockinfile_writes_and_idempotent() -> None:
    current = "127.0.0.1\tlocalhost\n"
    once = merge_block(current, "# frag\n10.0.0.1\ta\n")
    assert once == ("127.0.0.1\tlocalhost\n# BEGIN clusterforge managed block\n# frag\n10.0.0.1\ta\n"
                    "# END clusterforge managed block\n")
    assert merge_block(once, "# frag\n10.0.0.1\ta\n") == once
    assert "10.0.0.2" in merge_block(once + "tail\n", "10.0.0.2\tb\n").split("# END")[0]
    assert merge_block(once + "tail\n", "x\n").endswith("# END clusterforge managed block\ntail\n")


def test_limit_by_host_rack_role(checked: Checked) -> None:
    idx = checked.index
    assert select_hosts(idx, ["sm01"]) == ["sm01"]
    assert select_hosts(idx, ["lab-su02-r01"]) == ["gpu05", "gpu06", "gpu07", "gpu08"]
    assert select_hosts(idx, ["storage", "sm01"]) == ["sm01", "lus01", "lus02"]
    with pytest.raises(DeployError, match="nope"):
        select_hosts(idx, ["nope"])


def test_secrets_come_from_a_file_outside_the_inventory_and_stay_out_of_repr(tmp_path: Path,
                                                                              checked: Checked) -> None:
    auth = tmp_path / "auth.conf"
    auth.write_text("machine repo.example login u password s3cret\n")
    secret = read_repo_auth({"CLUSTERFORGE_REPO_AUTH_FILE": str(auth)})
    opts = DeployOptions("lab", repo=Mirror.parse("https://repo.example/x jammy main"), repo_auth=secret)
    assert "s3cret" not in repr(opts)
    repo = host_plans(checked.index, opts)["gpu01"].component("repo")
    assert repo is not None
    auth_file = next(f for f in repo.files if f.secret)
    assert auth_file.mode == 0o600 and auth_file.dest == "/etc/apt/auth.conf.d/clusterforge.conf"
    assert read_repo_auth({}) is None
