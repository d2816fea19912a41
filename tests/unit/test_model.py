from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from clusterforge.model import Cable, PortRef, normalize_guid


def test_portref_parses_switch_and_hca_forms() -> None:
    sw = PortRef.model_validate("leaf01/17")
    assert (sw.device, sw.hca, sw.port) == ("leaf01", None, 17)
    hca = PortRef.model_validate("gpu-r07-n12/mlx5_3/1")
    assert (hca.device, hca.hca, hca.port) == ("gpu-r07-n12", "mlx5_3", 1)
    assert str(hca) == "gpu-r07-n12/mlx5_3/1"


@pytest.mark.parametrize("text", ["leaf01:17", "leaf01/x", "a/b/c/d", "leaf01/0", "/1"])
def test_portref_rejects_malformed(text: str) -> None:
    with pytest.raises(ValidationError):
        PortRef.model_validate(text)


@given(
    st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True),
    st.one_of(st.none(), st.from_regex(r"mlx5_[0-9]{1,2}", fullmatch=True)),
    st.integers(min_value=1, max_value=512),
)
def test_portref_string_round_trip(device: str, hca: str | None, port: int) -> None:
    ref = PortRef(device=device, hca=hca, port=port)
    assert PortRef.model_validate(str(ref)) == ref


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_guid_normalizes_every_spelling(value: int) -> None:
    expected = f"0x{value:016x}"
    assert normalize_guid(value) == expected
    assert normalize_guid(f"{value:016X}") == expected
    assert normalize_guid(f"0x{value:016X}") == expected


@pytest.mark.parametrize("bad", ["0x98", "0xZZ00000000000000", "", 2**64, -1, True])
def test_guid_rejects(bad: object) -> None:
    with pytest.raises(ValueError):
        normalize_guid(bad)


def test_models_are_frozen_and_strict() -> None:
    cable = Cable.model_validate(
        {"id": "C-1", "a": "leaf01/1", "b": "spine01/1", "media": "AOC", "length_m": 5}
    )
    with pytest.raises(ValidationError):
        cable.length_m = 6  # type: ignore[misc]
    with pytest.raises(ValidationError):
        Cable.model_validate(
            {"id": "C-1", "a": "leaf01/1", "b": "spine01/1", "media": "AOC", "length_m": 5, "colour": "blue"}
        )


def test_a_profile_problem_is_reported_once_not_under_every_overriding_node() -> None:
    from pathlib import Path

    from clusterforge.api import load_checked
    from clusterforge.check import run_checks
    from clusterforge.model import Inventory
    from clusterforge.model.index import Index

    data = load_checked(Path(__file__).resolve().parents[2] / "inventories" / "lab").inv.model_dump(mode="json")
    gpu_node = next(p for p in data["profiles"] if p["name"] == "gpu-node")
    gpu_node["hcas"][0]["model"] = "ConnectX-99"
    for node in data["nodes"][:3]:  # three nodes override only their GPUs: the HCA problem is the profile's
        node["gpus"] = {**gpu_node["gpus"], "count": 8}
    data["nodes"][3]["hcas"] = [{**gpu_node["hcas"][1], "name": "mlx5_0", "model": "ConnectX-98", "gpu": 9}]
    issues = run_checks(Index(Inventory.model_validate(data)))
    unknown = [(i.path, i.message.split(" (")[0]) for i in issues if "unknown HCA model" in i.message]
    prof = data["profiles"].index(gpu_node)
    assert unknown == [(("profiles", prof, "hcas", 0, "model"), "unknown HCA model 'ConnectX-99'"),
                       (("nodes", 3, "hcas", 0, "model"), "unknown HCA model 'ConnectX-98'")]
    # a pairing the node's own HCA makes is still checked on the node (GPU 9 of 8)
    assert [i.path for i in issues if "is paired with GPU 9" in i.message] == [("nodes", 3, "hcas", 0, "gpu")]


def test_allocated_addresses_print_in_their_family() -> None:
    from netaddr import IPAddress

    from clusterforge.model.addresses import Addresses

    assert Addresses().text(int(IPAddress("198.18.10.11"))) == "198.18.10.11"
    assert Addresses().text(int(IPAddress("fd00:cf::10"))) == "fd00:cf::10"
