"""day-2 host diff: when nothing the host files are built from differs, one side's file specs serve both
(`same_host_file_inputs`); the result must be exactly what building both sides gives."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from _day2_util import cable, index_of, lab_data, node

from clusterforge.day2 import host_diff
from clusterforge.day2.host_diff import diff_hosts, same_host_file_inputs
from clusterforge.day2.inventory_diff import diff_inventories

Edit = Callable[[dict[str, Any]], None]


def _pins(d: dict[str, Any]) -> None:
    d["software"].update(nvidia_driver="550.127.05", doca_ofed="24.10-1.1.4.0", nccl="2.22.3-1",
                         lustre_client="2.15.6")


def _cooling(d: dict[str, Any]) -> None:
    next(r for r in d["racks"] if r["name"] == "lab-su01-r01").update(cooling="cold-plate", leak_sensors=2)


def _swap(d: dict[str, Any]) -> None:
    node(d, "gpu04").update(rack="lab-su02-r01", u=2)
    node(d, "gpu05").update(rack="lab-su01-r01", u=14)


def _recable(d: dict[str, Any]) -> None:
    cable(d, "C-00001")["b"] = "leaf-su01-r0/5"


def _relength(d: dict[str, Any]) -> None:  # same ports: host files unchanged
    cable(d, "C-00001")["length_m"] = 15


def _drop_node(d: dict[str, Any]) -> None:
    d["nodes"] = [n for n in d["nodes"] if n["name"] != "gpu08"]
    d["cables"] = [c for c in d["cables"] if not str(c["a"]).startswith("gpu08/")]


def _leaf_lock(d: dict[str, Any]) -> None:
    d["guid_locks"].setdefault("switches", {})["leaf-su02-r0"] = "0x0002c90300aa0001"


def _mtu(d: dict[str, Any]) -> None:
    d["addressing"]["ipoib"][0]["mtu"] = 4092


def _netdev(d: dict[str, Any]) -> None:
    node(d, "gpu01")["mgmt_netdev"] = "eno1"


CASES: dict[str, tuple[Edit, bool]] = {
    "pins": (_pins, True), "cooling": (_cooling, True), "swap slots": (_swap, True),
    "cable length": (_relength, True), "cable to another port": (_recable, False),
    "node retired": (_drop_node, False), "switch GUID lock": (_leaf_lock, False),
    "IPoIB MTU": (_mtu, False), "node mgmt_netdev": (_netdev, False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_shared_specs_give_the_same_host_changes(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    edit, same = CASES[case]
    old_data, new_data = lab_data(), lab_data()
    if case == "switch GUID lock":  # the lock is dropped: the unit was swapped
        edit(old_data)
    else:
        edit(new_data)
    old, new = index_of(old_data), index_of(new_data)
    diff = diff_inventories(old, new)
    assert same_host_file_inputs(old, new, diff) is same
    assert same_host_file_inputs(old, new) is same  # without the diff: the cabled ports compared
    got = diff_hosts(old, new, "lab", diff)
    monkeypatch.setattr(host_diff, "same_host_file_inputs", lambda *a: False)
    assert got == diff_hosts(old, new, "lab", diff)
    # the edits that change a host file or pin show (a cooling change or a cable's length do not); a slot swap
    # or a leaf-side port move changes only the monitoring server's scrape labels (u; leaf port, far end)
    monitoring_only = case in ("swap slots", "cable to another port")
    assert bool(got) is (case not in ("cooling", "cable length"))
    if monitoring_only:
        assert [(h.host, [(c.component, c.files) for c in h.components]) for h in got] == [
            ("sm01", [("monitoring", ("~/etc/clusterforge/monitoring/scrape.yml",))])]
