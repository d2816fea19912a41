"""The lab's stand-in repository: real names and versions, clearly labelled, indexable by apt."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from clusterforge.deploy.packages import Pin, all_pins, deb_version
from clusterforge.model.services import SoftwarePins
from clusterforge.rehearsal.standin import LABEL, build_repo

pytestmark = pytest.mark.skipif(not (shutil.which("dpkg-deb") and shutil.which("apt-ftparchive")
                                     and shutil.which("dpkg-scanpackages")),
                                reason="needs dpkg-dev and apt-utils")


def test_pins_from_software() -> None:
    sw = SoftwarePins(nvidia_driver="550.90.07", cuda="12.4.1", doca_ofed="24.04-0.7.0.0", nccl="2.21.5-1",
                      lustre_client="2.15.5")
    got = {p.package: p.version for p in all_pins(sw)}
    assert got["libnccl2"] == "2.21.5-1+cuda12.4"
    assert got["nvidia-fabricmanager-550"] == got["nvidia-driver-550"] == "550.90.07-1"
    assert got["doca-ofed"] == "24.04-0.7.0.0" and deb_version("2.15.5") == "2.15.5-1"


def test_build_repo(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "repo", [Pin("doca-ofed", "24.04-0.7.0.0")], kernels=["6.1.0-9-amd64"],
                      extra_versions=[Pin("doca-ofed", "23.10-2.1.3.1")])
    packages = (repo / "dists/lab/main/binary-amd64/Packages").read_text()
    assert packages.count("Package: doca-ofed") == 2 and "Package: linux-headers-6.1.0-9-amd64" in packages
    assert LABEL in packages and "Label: " + LABEL in (repo / "dists/lab/Release").read_text()
    deb = next(repo.glob("pool/doca-ofed_24.04-0.7.0.0_all.deb"))
    listing = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, timeout=30,
                             check=True).stdout
    assert "./usr/bin/ofed_info" in listing and "CLUSTERFORGE-LAB-STAND-IN" in listing
