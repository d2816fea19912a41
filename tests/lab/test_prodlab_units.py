"""A prod-shaped lab without starting it: selection, address mapping, and that no deploy/collect target of
a lab is ever an inventory address; the confirmation of real deploys; the Makefile's refusals.
No podman, no root, and nothing here contacts any host (not marked lab)."""

from __future__ import annotations

import ipaddress
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.api import Checked, load_checked
from clusterforge.cli.main import app
from clusterforge.deploy.api import DeployError, DeployRequest, Placed, plans_for, staged_only
from clusterforge.deploy.changes import Change
from clusterforge.deploy.confirm import needs_confirmation, prompt, refusal
from clusterforge.deploy.options import Mirror
from clusterforge.deploy.runner import HostResult
from clusterforge.inventory.selection import SelectionError, default_rehearsal, select_nodes
from clusterforge.lab.errors import LabError
from clusterforge.lab.netfile import parse_netfile
from clusterforge.lab.spec import LabSpec, validate_spec
from clusterforge.lab.state import HostRecord, LabState
from clusterforge.rehearsal import env as labenv
from clusterforge.rehearsal.stage import placed_in

ROOT = Path(__file__).resolve().parents[2]
PROD = ROOT / "inventories" / "prod"
LAB = ROOT / "inventories" / "lab"
RACK = ["gpu0001", "gpu0002", "gpu0003", "gpu0004"]


@pytest.fixture(scope="module")
def prod() -> Checked:
    return load_checked(PROD)


def inventory_addresses(checked: Checked) -> set[str]:
    a = checked.index.addresses
    return {a.text(ip) for ip in [*a.mgmt.values(), *a.bmc.values(), *a.ipoib.values()]}


def offline_state(spec: LabSpec) -> LabState:
    """The state a lab of `spec` would record (nothing started): hosts at their lab addresses."""
    return LabState(lab=spec.name, mode="podman", state_dir=spec.state_dir, spec_digest="", gateway=spec.gateway,
                    network_cidr=spec.network_cidr, ibsim_address=spec.ibsim_address, netfile=spec.netfile,
                    hosts={h.name: HostRecord(h.name, h.address, h.role, [(x.device, x.sim_host) for x in h.hcas])
                           for h in spec.hosts}, complete=True)


# -- selection -------------------------------------------------------------------------------


def test_default_prod_selection_rehearses_every_role(prod: Checked) -> None:
    chosen = default_rehearsal(prod.index)
    assert chosen == [*RACK, "sm01", "sm02", "lus01"]
    assert {prod.index.nodes[n].role for n in chosen} == {n.role for n in prod.inv.nodes}
    assert labenv.selection(prod.index) == chosen  # prod is large: `lab up` without --limit takes this


def test_limit_tokens_hosts_racks_roles_and_scalable_units(prod: Checked) -> None:
    idx = prod.index
    assert select_nodes(idx, ["prod-su01-r01"]) == RACK
    assert select_nodes(idx, ["sm02", "gpu0100"]) == ["gpu0100", "sm02"]  # inventory order
    assert select_nodes(idx, ["subnet-manager"]) == ["sm01", "sm02"]
    su2 = select_nodes(idx, ["su02"])
    assert len(su2) == 20 and su2[0] == "gpu0021"
    assert all(prod.index.nodes[n].rack.startswith("prod-su02-") for n in su2)
    with pytest.raises(SelectionError, match="nope, su99"):
        select_nodes(idx, ["gpu0001", "nope", "su99"])
    assert len(labenv.selection(idx, ("all",))) == len(prod.inv.nodes)


def test_the_lab_inventory_keeps_every_node_and_its_addresses() -> None:
    lab = load_checked(LAB)
    assert labenv.selection(lab.index) == [n.name for n in lab.inv.nodes]
    assert labenv.lab_cidr("198.18.10.0/24") == "198.18.10.0/24"


def test_real_management_networks_are_mapped_into_the_benchmarking_range() -> None:
    assert labenv.lab_cidr("10.10.0.0/20") == "198.18.64.0/20"
    assert labenv.lab_cidr("10.20.0.0/24") == "198.18.64.0/24"
    assert labenv.lab_cidr("10.10.0.0/20", "198.19.16.0/20") == "198.19.16.0/20"
    with pytest.raises(LabError, match=r"198\.18\.0\.0/15"):
        labenv.lab_cidr("10.10.0.0/20", "10.10.0.0/20")


# -- a prod-shaped lab, prepared but not started -------------------------------------------------


@pytest.fixture(scope="module")
def prod_spec(prod: Checked, tmp_path_factory: pytest.TempPathFactory) -> LabSpec:
    spec, _ = labenv.prepare(prod, PROD, tmp_path_factory.mktemp("prodlab"))
    return spec


def test_prod_spec_maps_addresses_host_part_for_host_part(prod: Checked, prod_spec: LabSpec) -> None:
    validate_spec(prod_spec)
    assert prod_spec.network_cidr == "198.18.64.0/20"
    by_name = {h.name: h for h in prod_spec.hosts}
    assert by_name["gpu0001"].address == "198.18.64.10"  # inventory 10.10.0.10
    assert by_name["sm01"].address == "198.18.65.10"  # inventory 10.10.1.10
    assert [x.device for x in by_name["gpu0001"].hcas] == ["mlx5_0", "mlx5_1"]
    assert {h.role for h in prod_spec.hosts} == {"compute", "subnet-manager", "storage"}
    assert prod_spec.sm_sim_host is None  # both SM nodes have containers: OpenSM runs in them


def test_no_deploy_or_collect_target_of_a_prod_lab_is_an_inventory_address(
        prod: Checked, prod_spec: LabSpec) -> None:
    forbidden = inventory_addresses(prod)
    assert "10.10.0.10" in forbidden and len(forbidden) > 1000
    state = offline_state(prod_spec)
    net = ipaddress.ip_network(state.network_cidr)
    mirror = Mirror(f"http://{state.gateway}:8765/", "lab", ("main",), "trusted=yes")
    placed = placed_in(state, plans_for(PROD, DeployRequest(), mirror, prod.index), ())
    plans = placed.plans
    assert sorted(p.name for p in plans) == sorted(h.name for h in prod_spec.hosts)
    staged_only(placed)  # raises on any address off the lab network
    hosts, fabric = labenv.collect_targets(state, prod)
    assert fabric is not None and fabric.host == "sm01"
    addresses = [p.address for p in plans] + [t.address for t in [*hosts, fabric]]
    assert not set(addresses) & forbidden
    assert all(ipaddress.ip_address(a) in net for a in addresses)
    # the plans as the inventory addresses them (no lab): refused as lab targets
    raw = list(plans_for(PROD, DeployRequest(limit=("gpu0001",)), mirror, prod.index).values())
    with pytest.raises(DeployError, match=r"gpu0001 at 10\.10\.0\.10"):
        staged_only(Placed(raw, {}, placed.network, placed.addresses))


def test_without_a_selected_sm_node_opensm_runs_beside_the_simulator(
        prod: Checked, tmp_path: Path) -> None:
    spec, _ = labenv.prepare(prod, PROD, tmp_path, limit=("prod-su01-r01",))
    validate_spec(spec)
    assert [h.name for h in spec.hosts] == RACK and not spec.sm_hosts
    assert spec.sm_sim_host is not None
    assert parse_netfile(spec.netfile).nodes[spec.sm_sim_host].desc == "sm01 mlx5_0"  # the master's HCA
    assert spec.opensm_config is not None
    conf = spec.opensm_config.read_text()
    assert "sm_priority 15" in conf and "/etc/opensm/" not in conf
    state = offline_state(spec)
    _, fabric = labenv.collect_targets(state, prod)
    assert fabric is not None and fabric.host == "gpu0001"  # any lab host with an HCA reads the fabric


# -- confirmation of real deploys ---------------------------------------------------------------


def test_only_a_real_run_on_real_hosts_needs_confirmation() -> None:
    assert needs_confirmation(lab=False, dry_run=False, yes=False)
    assert not needs_confirmation(lab=True, dry_run=False, yes=False)
    assert not needs_confirmation(lab=False, dry_run=True, yes=False)
    assert not needs_confirmation(lab=False, dry_run=False, yes=True)


def test_refusal_and_prompt_name_the_environment_hosts_and_changes() -> None:
    assert refusal("prod", 278, tty=True) is None
    why = refusal("prod", 278, tty=False)
    assert why is not None and "prod (278 host(s))" in why and "--yes" in why and "CONFIRM=1" in why
    results = [HostResult("a", "planned", [Change("nccl", "file", "/etc/nccl.conf", "create"),
                                           Change("nccl", "package", "libnccl2", "install")]),
               HostResult("b", "ok")]
    text = prompt("prod", results)
    assert "prod: 2 host(s), 2 change(s) on 1 host(s) (1 file(s), 1 package(s))" in text


def test_cli_refuses_a_real_prod_deploy_without_a_terminal_before_any_connection(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import clusterforge.deploy.api as api
    import clusterforge.deploy.runner as runner

    def forbidden(*_a: object, **_k: object) -> None:
        raise AssertionError("a connection was attempted")

    monkeypatch.setattr(api, "run_engine", forbidden)
    monkeypatch.setattr(runner, "make_state", forbidden)
    result = CliRunner().invoke(app, ["deploy", str(PROD), "--no-lab"], input="y\n")
    assert result.exit_code == 2, result.output
    assert "real deploy to prod (278 host(s)) must be confirmed" in result.output
    limited = CliRunner().invoke(app, ["deploy", str(PROD), "--no-lab", "--limit", "prod-su01-r01"])
    assert limited.exit_code == 2 and "prod (4 host(s))" in limited.output
    both = CliRunner().invoke(app, ["deploy", str(PROD), "--no-lab", "--lab", "/nonexistent"])
    assert both.exit_code == 2 and "contradict" in both.output


# -- make: a rehearsal never turns into a production run ------------------------------------------


def _make(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "-n", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=60,
                          check=False)


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_make_deploy_variants() -> None:
    for bad in (["LAB=yes"], ["LAB=0"], ["DRY=yes"], ["CONFIRM=true"], ["ENGINE=salt"], ["DRYRUN=1"]):
        res = _make("deploy", "ENV=prod", *bad)
        assert res.returncode != 0, bad
        assert bad[0] in res.stderr, res.stderr
        assert "clusterforge deploy" not in res.stdout
    lab = _make("deploy", "ENV=prod", "LAB=1", "LIMIT=prod-su01-r01")
    assert lab.returncode == 0, lab.stderr
    assert "lab up inventories/prod --systemd --no-start-sm --replace --limit 'prod-su01-r01'" in lab.stdout
    assert "lab services inventories/prod" in lab.stdout
    assert "--lab .lab/prod/state" in lab.stdout and "--no-lab" not in lab.stdout
    assert "lab-deps.sh" in lab.stdout
    default = _make("deploy")  # ENV=lab: a systemd lab too, its units checked after validate
    assert default.returncode == 0, default.stderr
    assert "lab up inventories/lab --systemd --no-start-sm --replace" in default.stdout
    assert "--lab .lab/lab/state" in default.stdout and "lab services inventories/lab" in default.stdout
    assert "lab services" not in _make("deploy", "DRY=1").stdout  # a dry run starts nothing to check
    real = _make("deploy", "ENV=prod")
    assert real.returncode == 0, real.stderr
    assert "--no-lab" in real.stdout and "--yes" not in real.stdout
    assert "lab up" not in real.stdout and "lab-deps.sh" not in real.stdout
    assert "--yes" in _make("deploy", "ENV=prod", "CONFIRM=1").stdout


def test_a_systemd_lab_past_the_inotify_limit_is_refused_with_the_numbers() -> None:
    from clusterforge.lab.lab import check_systemd_room

    check_systemd_room(7, limit=128, in_use=28)  # the default prod rehearsal fits
    with pytest.raises(LabError, match=r"32 containers needs about 224 .* is 128 with 28 in use: at most 14"):
        check_systemd_room(32, limit=128, in_use=28)
    with pytest.raises(LabError, match=r"Nothing was started.*sysctl -w fs.inotify.max_user_instances=1024"):
        check_systemd_room(11, limit=128, in_use=60)  # the lab inventory beside a 60-instance load
