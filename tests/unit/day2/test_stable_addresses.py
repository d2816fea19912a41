"""Stable identity on prod: retiring a middle rack or inserting nodes mid-list re-addresses no one else,
and the Lustre MGS NID keeps pointing at lus01 (addresses frozen in addresses.generated.yaml)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cf_lab_inventory import ROOT
from clusterforge.api import load_checked
from clusterforge.cli.main import app
from clusterforge.day2.inventory_diff import diff_inventories
from clusterforge.model.addresses import Addresses
from clusterforge.model.index import Index

PROD = ROOT / "inventories" / "prod"
runner = CliRunner()


def _copy(tmp_path: Path, name: str) -> Path:
    env = tmp_path / name
    shutil.copytree(PROD, env)
    return env


def _edit_nodes(env: Path, edit: str, replace: str = "") -> None:
    nodes = env / "nodes.yaml"
    text = nodes.read_text()
    assert re.search(edit, text, flags=re.M), edit
    nodes.write_text(re.sub(edit, replace, text, flags=re.M))


def _retire_middle_rack(env: Path) -> None:
    _edit_nodes(env, r"^  - \{name: gpu00(49|50|51|52), rack: prod-su03-r03,.*\n")
    result = runner.invoke(app, ["plan", str(env), "--write"])  # what an operator runs after the edit
    assert result.exit_code == 0, result.output


def _insert_mid_list(env: Path) -> None:
    # out of name order and far from the end of the list: the old rule shifted every node after them
    _edit_nodes(env, r"^(  - \{name: gpu0048, rack: prod-su03-r02, u: 14, profile: gpu-node\}\n)",
                r"\1  - {name: gpu0301, rack: prod-su03-r02, u: 18, profile: gpu-node}\n")
    _edit_nodes(env, r"^(  - \{name: gpu0052, rack: prod-su03-r03, u: 14, profile: gpu-node\}\n)",
                r"\1  - {name: gpu0300, rack: prod-su03-r03, u: 18, profile: gpu-node}\n")


def _moved(a: Addresses, b: Addresses, nodes: set[str]) -> list[str]:
    out = []
    for name in sorted(nodes):
        for pool in sorted({*a.pools, *b.pools}):
            if a.get(name, pool) != b.get(name, pool):
                out.append(f"{name} {pool}")
    return out


def _address_changes(old: Index, new: Index) -> list[str]:
    return [f"{d.name}: {f}" for d in diff_inventories(old, new).devices for f in d.fields if f.startswith("address ")]


@pytest.fixture(scope="module")
def prod() -> Index:
    return load_checked(PROD).index


@pytest.mark.parametrize("edit", [_retire_middle_rack, _insert_mid_list], ids=["retire-middle-rack", "insert-mid-list"])
def test_no_other_node_is_readdressed(edit: object, prod: Index, tmp_path: Path) -> None:
    env = _copy(tmp_path, "prod")
    edit(env)  # type: ignore[operator]
    new = load_checked(env).index
    kept = prod.nodes.keys() & new.nodes.keys()
    assert len(kept) >= 274
    assert _moved(prod.addresses, new.addresses, kept) == []
    assert _address_changes(prod, new) == []
    assert new.addresses.nids == prod.addresses.nids == [("10.100.1.12@o2ib0",)]  # still lus01
    assert new.inv.lustre[0].mgs_nids == ["lus01@o2ib0"]
    result = runner.invoke(app, ["diff", str(PROD), str(env)])
    assert result.exit_code == 0, result.output
    assert "its addresses change" not in result.output and "renumbered" not in result.output


def test_inserted_nodes_take_never_used_addresses(prod: Index, tmp_path: Path) -> None:
    env = _copy(tmp_path, "prod")
    _insert_mid_list(env)
    addrs = load_checked(env).index.addresses
    used = set(prod.addresses.mgmt.values())
    top = max(used)
    assert [addrs.mgmt["gpu0300"] - top, addrs.mgmt["gpu0301"] - top] == [1, 2]  # in name order
    assert not {addrs.ipoib[("gpu0300", "ib0")], addrs.ipoib[("gpu0301", "ib0")]} & set(prod.addresses.ipoib.values())


def test_retired_rack_addresses_are_released_not_reused(tmp_path: Path) -> None:
    env = _copy(tmp_path, "prod")
    _retire_middle_rack(env)
    text = (env / "addresses.generated.yaml").read_text()
    nodes, released = text.split("  released:\n")
    assert "gpu0049" not in nodes and "10.10.0.58: gpu0049" in released
    _edit_nodes(env, r"^(  - \{name: gpu0048, rack: prod-su03-r02, u: 14, profile: gpu-node\}\n)",
                r"\1  - {name: gpu0400, rack: prod-su03-r02, u: 18, profile: gpu-node}\n")
    addrs = load_checked(env).index.addresses
    assert addrs.text(addrs.mgmt["gpu0400"]) not in released


def test_without_the_frozen_file_the_same_insertion_renumbers(tmp_path: Path) -> None:
    """The check above can fail: the list-order rule, still used for a first allocation, shifts nodes."""
    old, new = _copy(tmp_path, "old"), _copy(tmp_path, "new")
    for env in (old, new):
        (env / "addresses.generated.yaml").unlink()
    _insert_mid_list(new)
    a, b = load_checked(old).index, load_checked(new).index
    moved = _moved(a.addresses, b.addresses, a.nodes.keys() & b.nodes.keys())
    assert "lus01 ib0" in moved and len(moved) > 200
