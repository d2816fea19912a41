"""The operating system in the model (#34 step 1): profiles[].os with a per-node override (default debian12),
a release the catalog knows (INV-OS lists the known ones), and a driver pin its family can install."""

from __future__ import annotations

from typing import Any

import pytest

from cf_lab_inventory import index_of, lab_data
from clusterforge.check import run_checks
from clusterforge.util.errors import format_path


def _issues(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(format_path(i.path), i.rule, i.message) for i in run_checks(index_of(data)) if i.rule == "INV-OS"]


def test_the_default_is_debian12_and_the_lab_is_clean() -> None:
    index = index_of(lab_data())
    assert {hw.os for hw in index.hardware.values()} == {"debian12"}
    assert _issues(lab_data()) == []


@pytest.mark.parametrize("release", ["debian12", "ubuntu2204", "ubuntu2404", "rocky9", "alma9", "rhel9"])
def test_every_known_release_is_accepted(release: str) -> None:
    data = lab_data()
    for p in data["profiles"]:
        p["os"] = release
    assert _issues(data) == []
    assert {hw.os for hw in index_of(data).hardware.values()} == {release}


def test_a_node_overrides_its_profile() -> None:
    data = lab_data()
    data["nodes"][0]["os"] = "rocky9"
    hw = index_of(data).hardware
    assert hw[data["nodes"][0]["name"]].os == "rocky9" and hw[data["nodes"][1]["name"]].os == "debian12"


def test_an_unknown_release_is_refused_with_the_known_ones() -> None:
    data = lab_data()
    data["profiles"][0]["os"] = "centos7"
    data["nodes"][2]["os"] = "ubuntu1804"
    found = _issues(data)
    assert [(p, r) for p, r, _ in found] == [("profiles[0].os", "INV-OS"), ("nodes[2].os", "INV-OS")]
    assert "unknown operating system 'centos7': known are debian12, ubuntu2204, ubuntu2404, rocky9, alma9, rhel9" \
        in found[0][2]


def test_a_driver_branch_el9_cannot_install_is_refused() -> None:
    data = lab_data()
    gpu_nodes = [n for n in data["nodes"] if n["name"].startswith("gpu")]
    for n in gpu_nodes[:2]:
        n["os"] = "rocky9"
    data["software"]["nvidia_driver"] = "470.256.02"  # R470: before the open kernel modules
    ((path, rule, message),) = _issues(data)
    assert (path, rule) == ("software.nvidia_driver", "INV-OS")
    assert "driver 470.256.02 (branch 470) cannot be installed on gpu[01-02] (rocky9)" in message
    assert "pin branch 515 or later" in message
    data["software"]["nvidia_driver"] = "550.90.07"
    assert _issues(data) == []
    for n in gpu_nodes[:2]:
        n["os"] = "ubuntu2204"  # the Ubuntu repositories still carry the proprietary R470 driver
    data["software"]["nvidia_driver"] = "470.256.02"
    assert _issues(data) == []
