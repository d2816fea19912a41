"""The lab's OS-shaped hosts: each shape's LAB-ONLY os-release is one the deploy accepts for that release (and
refuses for the others), it says it is a stand-in, and the image tag tells the shapes apart."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from clusterforge.deploy.os_target import OS_RELEASE_SCRIPT, mismatch, os_target, parse_found
from clusterforge.lab.errors import LabError
from clusterforge.lab.image import SHAPE_PACKAGES, check_shape, customize_shape, image_tag


def _found(root: Path):  # type: ignore[no-untyped-def]
    script = OS_RELEASE_SCRIPT.replace("/etc/os-release", str(root / "etc/os-release")).replace(
        "/usr/lib/os-release", str(root / "usr/lib/os-release"))
    return parse_found(subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=10,
                                      check=True).stdout.split("\n"))


@pytest.mark.parametrize("shape", sorted(set(SHAPE_PACKAGES) - {"debian12"}))
def test_a_shaped_host_is_the_release_it_stands_in_for(tmp_path: Path, shape: str) -> None:
    root = tmp_path / "rootfs"
    (root / "etc/dnf/plugins").mkdir(parents=True)
    (root / "etc/dnf/plugins/local.conf").write_text("[main]\nenabled=1\n")
    (root / "etc/os-release").write_text("ID=debian\nVERSION_ID=12\n")  # what debootstrap left
    customize_shape(root, shape)
    found = _found(root)
    assert mismatch(os_target(shape), found) is None
    assert all(mismatch(os_target(other), found) for other in ("debian12", "rocky9", "ubuntu2404") if other != shape)
    assert "LAB-ONLY" in found.pretty_name
    assert (root / "etc/os-release").is_symlink()
    if os_target(shape).family == "el9":
        assert 'PLATFORM_ID="platform:el9"' in (root / "usr/lib/os-release").read_text()  # dnf's module filter
        assert "enabled=0" in (root / "etc/dnf/plugins/local.conf").read_text()
        assert (root / "etc/dnf/vars/releasever").read_text() == "9\n"


def test_every_release_of_the_catalog_has_a_shape() -> None:
    """A node may declare any release of catalog/os.yaml and `lab up` shapes its host so (rocky9, alma9, rhel9
    alike: each its own os-release, the same real rpm and dnf)."""
    from clusterforge.catalog import catalog

    assert set(SHAPE_PACKAGES) == set(catalog().os.releases)
    assert {SHAPE_PACKAGES[r] for r in ("rocky9", "alma9", "rhel9")} == {SHAPE_PACKAGES["rocky9"]}


def test_the_plain_image_keeps_its_tag_and_shapes_get_their_own() -> None:
    plain = image_tag()
    assert plain == image_tag(shape="debian12") and "-rocky9-" not in plain
    assert len({plain, image_tag(shape="rocky9"), image_tag(shape="ubuntu2204")}) == 3
    with pytest.raises(LabError, match="cannot take the shape 'sles15'"):
        check_shape("sles15")
