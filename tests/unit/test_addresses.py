"""Address allocation (model/addresses.py) and its frozen file (addresses_file.py): list order never
moves a frozen address, new nodes take never-used ones, released ones are reused last."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from cf_lab_inventory import LAB, ROOT, index_of, lab_data
from clusterforge.api import load_checked
from clusterforge.cli.main import app
from clusterforge.deploy.api import DeployOutcome, DeployRequest, run_engine
from clusterforge.inventory import addresses_file
from clusterforge.model.addresses import Addresses, allocate
from clusterforge.model.index import Index

runner = CliRunner()


def _ip(addrs: Addresses, node: str, pool: str = "mgmt") -> str | None:
    value = addrs.get(node, pool)
    return None if value is None else addrs.text(value)


def _node(name: str, u: int = 30) -> dict[str, Any]:
    return {"name": name, "rack": "lab-su02-r01", "u": u, "profile": "gpu-node"}


def _refreeze(data: dict[str, Any]) -> dict[str, Any]:
    """`plan --write` on data: allocate, render the file, read its section back."""
    index = index_of(data)
    text = addresses_file.render(index, index.addresses)
    return {**data, "allocations": yaml.safe_load(text)["allocations"]}


def _without_file(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "allocations"}


@pytest.mark.parametrize("env", ["lab", "staging", "prod"])
def test_the_committed_files_hold_the_addresses_the_node_list_gave(env: str) -> None:
    checked = load_checked(ROOT / "inventories" / env)
    frozen = checked.index.addresses
    assert frozen.frozen and not frozen.released
    before = Index(checked.inv.model_copy(update={"allocations": type(checked.inv.allocations)()}))
    old = before.addresses
    assert (frozen.mgmt, frozen.bmc, frozen.ipoib) == (old.mgmt, old.bmc, old.ipoib)
    assert frozen.nids == old.nids


def test_reordering_the_node_list_moves_no_address() -> None:
    data = lab_data()
    before = index_of(data).addresses
    data["nodes"].reverse()
    after = index_of(data).addresses
    assert (after.mgmt, after.bmc, after.ipoib) == (before.mgmt, before.bmc, before.ipoib)
    assert len(after.frozen) == 41  # 11 nodes x (mgmt, bmc, ib0) + 8 GPU nodes' ib1
    # without the frozen file the list decides, as it did before
    legacy = index_of(_without_file(data)).addresses
    assert _ip(legacy, "lus02") == "198.18.10.10" and _ip(before, "lus02") == "198.18.10.20"


def test_new_nodes_take_the_lowest_never_used_addresses_in_name_order() -> None:
    data = lab_data()
    data["nodes"][0:0] = [_node("gpu11", 30), _node("gpu10", 32)]  # listed first, and out of name order
    addrs = index_of(data).addresses
    assert [_ip(addrs, n) for n in ("gpu10", "gpu11")] == ["198.18.10.21", "198.18.10.22"]
    # ib1: the list gave .18-.20 to nobody (sm01 and the Lustre servers have no second rail): never used
    assert [_ip(addrs, n, "ib1") for n in ("gpu10", "gpu11")] == ["198.18.136.18", "198.18.136.19"]
    assert _ip(addrs, "gpu01") == "198.18.10.10" and _ip(addrs, "lus01", "ib0") == "198.18.128.19"
    assert ("gpu10", "mgmt") not in addrs.frozen and ("gpu01", "mgmt") in addrs.frozen


def test_a_removed_nodes_address_is_not_given_to_a_node_added_in_the_same_change() -> None:
    data = lab_data()
    data["nodes"] = [n for n in data["nodes"] if n["name"] != "gpu03"] + [_node("gpu10")]
    addrs = index_of(data).addresses
    assert _ip(addrs, "gpu10") == "198.18.10.21"  # not gpu03's 198.18.10.12
    assert addrs.released["mgmt"] == {int(addrs.mgmt["gpu01"]) + 2: "gpu03"}
    text = addresses_file.render(index_of(data), addrs)
    assert "gpu03" not in text.split("released:")[0]  # pruned from `nodes` ...
    assert "198.18.10.12: gpu03" in text.split("released:")[1]  # ... and kept as released


def test_released_addresses_are_reused_last_and_a_returning_node_gets_its_own() -> None:
    data = _refreeze({**lab_data(), "nodes": [n for n in lab_data()["nodes"] if n["name"] != "gpu03"]})
    assert data["allocations"]["released"]["mgmt"] == {"198.18.10.12": "gpu03"}
    grown = {**data, "nodes": [*data["nodes"], _node("gpu10")]}
    assert _ip(index_of(grown).addresses, "gpu10") == "198.18.10.21"
    back = {**data, "nodes": [*data["nodes"], _node("gpu03")]}
    addrs = index_of(back).addresses
    assert [_ip(addrs, "gpu03", p) for p in ("mgmt", "bmc", "ib0")] == ["198.18.10.12", "198.18.11.12",
                                                                        "198.18.128.12"]
    assert "mgmt" not in addrs.released
    # a /27 has .10-.30 from `first`: ten never-used left, then the released one
    small = {**data, "addressing": {**data["addressing"], "management": {"cidr": "198.18.10.0/27", "first": 10}},
             "nodes": [*data["nodes"], *(_node(f"new{i:02d}", 30) for i in range(11))]}
    addrs = index_of(small).addresses
    assert [_ip(addrs, f"new{i:02d}") for i in range(11)] == [f"198.18.10.{h}" for h in range(21, 31)] + [
        "198.18.10.12"]
    assert not addrs.issues


def test_an_explicit_address_wins_and_the_one_it_replaces_is_held_back() -> None:
    data = lab_data()
    next(n for n in data["nodes"] if n["name"] == "gpu01")["mgmt_ip"] = "198.18.10.200"
    data["nodes"].append(_node("gpu10"))
    addrs = index_of(data).addresses
    assert _ip(addrs, "gpu01") == "198.18.10.200" and _ip(addrs, "gpu10") == "198.18.10.21"
    assert addrs.released["mgmt"] == {int(addrs.mgmt["gpu02"]) - 1: "gpu01"}
    assert "gpu01: {mgmt: 198.18.10.200," in addresses_file.render(index_of(data), addrs)


def test_pool_exhausted_by_leaving_nodes_says_who_holds_it() -> None:
    data = lab_data()
    data["addressing"]["management"] = {"cidr": "198.18.10.0/27", "first": 10}
    data["nodes"] = [n for n in data["nodes"] if n["name"] != "gpu08"]
    data["nodes"] += [_node(f"new{i:02d}") for i in range(11)]  # ten never-used (.21-.30), gpu08's held
    addrs = index_of(data).addresses
    [issue] = addrs.issues
    assert "no address left in addressing.management 198.18.10.0/27" in issue.message
    assert "(new10)" in issue.message and "held back for nodes leaving in this change (gpu08)" in issue.message


def test_renumber_allocates_by_the_node_list_again() -> None:
    data = lab_data()
    data["nodes"].reverse()  # lus02 is first now
    index = index_of(data)
    assert _ip(index.addresses, "lus02") == "198.18.10.20"
    renumbered = allocate(index, renumber=True)
    assert _ip(renumbered, "lus02") == "198.18.10.10" and not renumbered.frozen


def test_guid_subnets_are_not_frozen() -> None:
    data = lab_data()
    data["addressing"]["ipoib"][0]["assign"] = "guid"
    addrs = index_of(data).addresses
    assert "ib0" not in addrs.pools and not any(pool == "ib0" for _, pool in addrs.frozen)
    assert "ib0:" not in addresses_file.render(index_of(data), addrs)
    assert "ib1" in addrs.pools


def test_the_file_round_trips_and_rewriting_converges() -> None:
    data = lab_data()
    data["nodes"] = [n for n in data["nodes"] if n["name"] not in ("gpu03", "lus02")]
    once = _refreeze(data)
    twice = _refreeze(once)
    text = addresses_file.render(index_of(twice), index_of(twice).addresses)
    assert text == addresses_file.render(index_of(once), index_of(once).addresses)
    assert twice["allocations"] == once["allocations"]
    assert once["allocations"]["released"]["ipoib"]["ib0"] == {"198.18.128.12": "gpu03", "198.18.128.20": "lus02"}


def test_named_mgs_nid_resolves_to_the_servers_address() -> None:
    data = lab_data()
    assert data["lustre"][0]["mgs_nids"] == ["lus01@o2ib0"]
    assert index_of(data).addresses.nids == [("198.18.128.19@o2ib0",)]
    data["nodes"].insert(0, _node("gpu10"))
    assert index_of(data).addresses.nids == [("198.18.128.19@o2ib0",)]
    data["lustre"][0]["mgs_nids"] = ["lus02@o2ib0", "198.18.128.19@o2ib0"]
    assert index_of(data).addresses.nids == [("198.18.128.20@o2ib0", "198.18.128.19@o2ib0")]


def _lab_copy(tmp_path: Path) -> Path:
    env = tmp_path / "lab"
    shutil.copytree(LAB, env)
    return env


def test_plan_renumber_shows_what_moves_and_writes_only_with_write(tmp_path: Path) -> None:
    env = _lab_copy(tmp_path)
    frozen = env / addresses_file.GENERATED
    committed = frozen.read_text()
    swapped = committed.replace("gpu01: {mgmt: 198.18.10.10", "gpu01: {mgmt: 198.18.10.99")
    frozen.write_text(swapped)
    result = runner.invoke(app, ["plan", str(env), "--renumber"])
    assert result.exit_code == 0, result.output
    assert "renumber gpu01 mgmt: 198.18.10.99 -> 198.18.10.10" in result.output
    assert "1 address(es) move (nothing written: add --write)" in result.output
    assert frozen.read_text() == swapped
    result = runner.invoke(app, ["plan", str(env), "--renumber", "--write"])
    assert result.exit_code == 0, result.output
    assert frozen.read_text() == committed
    again = runner.invoke(app, ["plan", str(env), "--write", "--format", "json"])
    assert again.exit_code == 0, again.output
    assert frozen.read_text() == committed  # converges, byte for byte


def test_renumber_recovers_from_a_subnet_change(tmp_path: Path) -> None:
    env = _lab_copy(tmp_path)
    services = env / "services.yaml"
    services.write_text(services.read_text().replace("bmc: {cidr: 198.18.11.0/24", "bmc: {cidr: 198.18.12.0/24"))
    refused = runner.invoke(app, ["plan", str(env), "--write"])
    assert refused.exit_code == 3
    assert "allocations.nodes.gpu01.bmc: 198.18.11.10, frozen for gpu01, is outside the bmc subnet" in refused.output
    result = runner.invoke(app, ["plan", str(env), "--write", "--renumber"])
    assert result.exit_code == 0, result.output
    assert "renumber gpu01 bmc: 198.18.11.10 -> 198.18.12.10" in result.output
    assert runner.invoke(app, ["check", str(env)]).exit_code == 0


def test_the_first_real_deploy_freezes_the_addresses_and_a_dry_run_does_not(tmp_path: Path) -> None:
    env = _lab_copy(tmp_path)
    frozen = env / addresses_file.GENERATED
    frozen.unlink()
    hosts: list[int] = []

    def fake_run(plans: list[Any], ssh: Any, parallel: int) -> DeployOutcome:
        hosts.append(len(plans))  # nothing is contacted: the engine is replaced
        return DeployOutcome([])

    dry = run_engine(env, DeployRequest(dry_run=True), "pyinfra", fake_run)
    assert not frozen.exists() and dry.notes == []
    real = run_engine(env, DeployRequest(), "pyinfra", fake_run)
    assert frozen.read_text() == (LAB / addresses_file.GENERATED).read_text()
    assert real.notes == [f"addresses frozen in {frozen} (first deploy): commit it with the inventory"]
    assert run_engine(env, DeployRequest(), "pyinfra", fake_run).notes == []
    assert hosts == [11, 11, 11]


def test_allocations_kept_in_another_file_are_not_written_twice(tmp_path: Path) -> None:
    env = _lab_copy(tmp_path)
    (env / addresses_file.GENERATED).rename(env / "frozen.yaml")
    result = runner.invoke(app, ["plan", str(env), "--write"])
    assert result.exit_code == 2
    assert f"{env / 'frozen.yaml'}: allocations is written by `plan --write` into" in result.output
    assert not (env / addresses_file.GENERATED).exists()
    real = run_engine(env, DeployRequest(), "pyinfra", lambda plans, ssh, parallel: DeployOutcome([]))
    assert real.notes == [] and not (env / addresses_file.GENERATED).exists()
    assert runner.invoke(app, ["check", str(env)]).exit_code == 0
