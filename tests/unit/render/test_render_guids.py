"""GUIDs: locks over declared over placeholders; placeholders stable, recognizable, flagged."""

from __future__ import annotations

from _render_common import index_of, lab_data, lab_index

from clusterforge.render.fabric import FabricView
from clusterforge.render.guids import (
    PLACEHOLDER_PREFIX,
    build_guids,
    fmt,
    is_placeholder,
    placeholder_ca_guid,
    placeholder_switch_guid,
)


def test_placeholders_are_stable_and_prefixed() -> None:
    # Fixed values: a change here changes every rendered lab file (and the goldens).
    assert fmt(placeholder_switch_guid("spine01")) == "0x02cf535ea3baf784"
    assert fmt(placeholder_ca_guid("gpu01", "mlx5_0")) == "0x02cf48efff690da0"
    assert placeholder_ca_guid("gpu01", "mlx5_0") & 0xF == 0
    assert is_placeholder(placeholder_switch_guid("x"))
    assert not is_placeholder(0x0002C90300A1B2C3)
    assert PLACEHOLDER_PREFIX == 0x02CF


def test_lab_is_all_placeholders_and_flagged() -> None:
    fab = FabricView(lab_index())
    book = fab.guids
    assert all(is_placeholder(g) for g in book.switches.values())
    assert all(is_placeholder(g) for g in book.ca_nodes.values())
    # the ibsim rule: a CA port GUID is its node GUID plus the port number
    assert book.port("gpu01", "mlx5_0", 1) == book.ca("gpu01", "mlx5_0") + 1
    assert {"spine01", "gpu01/mlx5_0", "gpu01/mlx5_0/1", "sm01/mlx5_0/1"} <= book.placeholders
    assert book.unknown(["spine01", "spine01", "nope"]) == ("spine01",)
    # a second build gives the same GUIDs
    assert FabricView(lab_index()).guids == book


def test_locks_win_over_declared_and_clear_the_flag() -> None:
    data = lab_data()
    data["switches"][5]["guid"] = "0x0002c90300000aaa"  # spine01, declared
    data["guid_locks"] = {
        "switches": {"spine01": "0x0002c90300000bbb", "spine02": "0x0002c90300000ccc"},
        "hcas": {"gpu01/mlx5_0": "0x0002c90300001000"},
        "ports": {"gpu01/mlx5_0/1": "0x0002c90300001000"},
    }
    book = FabricView(index_of(data)).guids
    assert book.switch("spine01") == 0x0002C90300000BBB
    assert book.switch("spine02") == 0x0002C90300000CCC
    assert book.ca("gpu01", "mlx5_0") == 0x0002C90300001000
    assert book.port("gpu01", "mlx5_0", 1) == 0x0002C90300001000
    assert not {"spine01", "spine02", "gpu01/mlx5_0", "gpu01/mlx5_0/1"} & book.placeholders
    assert "gpu01/mlx5_1/1" in book.placeholders


def test_declared_guids_are_used() -> None:
    data = lab_data()
    gpu01 = next(n for n in data["nodes"] if n["name"] == "gpu01")
    gpu01["hcas"] = [
        {"name": "mlx5_0", "model": "ConnectX-6", "rail": 0, "node_guid": "0x1070fd0300cf8a3c",
         "ports": [{"port": 1, "rate": "HDR", "guid": "0x1070fd0300cf8a3c"}]},
        {"name": "mlx5_1", "model": "ConnectX-6", "rail": 1, "ports": [{"port": 1, "rate": "HDR"}]},
    ]
    book = FabricView(index_of(data)).guids
    assert book.port("gpu01", "mlx5_0", 1) == 0x1070FD0300CF8A3C
    assert "gpu01/mlx5_0/1" not in book.placeholders
    assert "gpu01/mlx5_1/1" in book.placeholders


def test_placeholder_never_collides_with_a_known_guid() -> None:
    index = lab_index()
    taken = placeholder_switch_guid("spine01")
    data = lab_data()
    data["guid_locks"] = {"switches": {"spine02": fmt(taken)}}
    book = build_guids(index_of(data), [])
    assert book.switch("spine02") == taken
    assert book.switch("spine01") != taken  # re-salted
    assert is_placeholder(book.switch("spine01"))
    assert len(set(book.switches.values())) == len(index.inv.switches)


def test_ca_placeholder_block_avoids_a_known_guid_inside_it() -> None:
    # a known GUID inside the CA's would-be 16-GUID block (node GUID + ports) re-salts the CA
    inside = placeholder_ca_guid("gpu01", "mlx5_0") + 3
    data = lab_data()
    data["guid_locks"] = {"switches": {"spine02": fmt(inside)}}
    fab = FabricView(index_of(data))
    book = fab.guids
    node_guid = book.ca("gpu01", "mlx5_0")
    assert node_guid != placeholder_ca_guid("gpu01", "mlx5_0")
    assert node_guid == placeholder_ca_guid("gpu01", "mlx5_0", salt=1)
    assert inside not in range(node_guid, node_guid + 16)
    # every GUID in the book is distinct
    every = [*book.switches.values(), *book.ca_nodes.values(),
             *(g for (n, c, _p), g in book.ca_ports.items() if g != book.ca(n, c))]
    assert len(every) == len(set(every))
