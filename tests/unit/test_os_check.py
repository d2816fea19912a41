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


@pytest.mark.parametrize(("family", "component", "branch", "want"), [
    ("debian", "nvidia", "550", ["nvidia-driver-550"]),  # what the deploy installs today
    ("debian", "fabricmanager", "550", ["nvidia-fabricmanager-550"]),
    ("ubuntu", "nvidia", "570", ["nvidia-driver-pinning-570", "nvidia-open"]),
    ("ubuntu", "fabricmanager", "570", ["nvidia-fabricmanager-570"]),
    ("ubuntu", "fabricmanager", "580", ["nvidia-fabricmanager"]),  # one name from R580 on
    ("el9", "fabricmanager", "570", ["nvidia-fabric-manager"]),
    ("el9", "fabricmanager", "590", ["nvidia-fabricmanager"]),
    ("el9", "nccl", "", ["libnccl", "libnccl-devel"]),
    ("ubuntu", "nccl", "", ["libnccl2", "libnccl-dev"]),
    ("el9", "lustre_client", "", ["kmod-lustre-client", "lustre-client"]),
])
def test_the_package_catalog_per_family(family: str, component: str, branch: str, want: list[str]) -> None:
    from clusterforge.catalog import catalog

    assert catalog().os.package_names(family, component, branch=branch) == want


def test_every_family_names_every_component_and_the_deploy_reads_the_catalog() -> None:
    from clusterforge.catalog import catalog
    from clusterforge.deploy.packages import DEFAULT_FAMILY, nvidia_pins
    from clusterforge.model.services import SoftwarePins

    os = catalog().os
    assert set(os.packages) == {r.family for r in os.releases.values()}
    assert set(os.packages["ubuntu"]) == set(os.packages["el9"])
    assert os.packages["el9"]["nvidia"].module == "nvidia-driver:{branch}-open"
    assert os.package_names("ubuntu", "dcgm", cuda="12") == ["datacenter-gpu-manager-4-cuda12"]
    assert os.package_names("el9", "kernel_headers", kernel="5.14.0-427.el9.x86_64") == \
        ["kernel-devel-5.14.0-427.el9.x86_64"]
    pins = nvidia_pins(SoftwarePins(nvidia_driver="550.90.07"), nvswitch=True)
    assert DEFAULT_FAMILY == "debian"
    assert [p.package for p in pins] == os.package_names("debian", "nvidia", branch="550") + \
        os.package_names("debian", "fabricmanager", branch="550")
    assert {p.version for p in pins} == {"550.90.07-1"}  # Fabric Manager at exactly the driver's version
