"""validate reads each host's installed versions from its own package manager: dpkg-query on Debian and Ubuntu,
rpm -q on EL, under the family's package names, and holds them to the same pins (SW-VERSION)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cf_os_families import declare_os
from clusterforge.api import load_checked
from clusterforge.collect.plan import default_targets, version_packages
from clusterforge.parse import ParseError
from clusterforge.parse.rpm_query import parse
from clusterforge.validate.software import check_packages

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "tests" / "fixtures" / "rpm-query" / "lab-rocky9-shape-standins.txt"


@pytest.fixture(scope="module")
def families(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    env = tmp_path_factory.mktemp("fam") / "lab"
    shutil.copytree(ROOT / "inventories" / "lab", env)
    declare_os(env, {"gpu07": "ubuntu2204", "gpu08": "rocky9"})
    return load_checked(env).index


def test_rpm_output_is_read_and_a_missing_package_is_an_absence() -> None:
    assert parse(FIXTURE.read_text()) == {"libnccl": "2.21.5-1+cuda12.4", "kmod-lustre-client": "2.15.5-1"}
    assert parse("") == {}
    with pytest.raises(ParseError) as err:
        parse("libnccl 2.21.5-1\nerror: rpmdb: damaged header\n")
    assert err.value.line_no == 2
    with pytest.raises(ParseError):
        parse("libnccl 2.21.5\n")  # no release: not what the query format prints


def test_each_host_is_asked_its_own_manager_under_its_familys_names(families) -> None:  # type: ignore[no-untyped-def]
    hosts, _ = default_targets(families, {n.name: "198.18.0.1" for n in families.inv.nodes})
    cmds = {t.host: t.commands for t in hosts}
    assert cmds["gpu08"]["rpm-query"][:4] == ("rpm", "-q", "--qf", "%{NAME} %{VERSION}-%{RELEASE}\n")
    assert set(cmds["gpu08"]["rpm-query"][4:]) == {"libnccl", "kmod-lustre-client", "lemur-hsm-agent"}
    assert "dpkg-query" not in cmds["gpu08"]
    assert cmds["gpu07"]["dpkg-query"][0] == "dpkg-query" and "libnccl2" in cmds["gpu07"]["dpkg-query"]
    assert cmds["gpu01"]["dpkg-query"][3:] == tuple(version_packages("debian"))


def test_an_el_host_off_its_pin_is_a_sw_version_finding(families) -> None:  # type: ignore[no-untyped-def]
    installed = parse(FIXTURE.read_text())
    assert check_packages(families, "gpu08", installed) == []  # the lab's pins: NCCL 2.21.5-1, Lustre 2.15.5
    drifted = {**installed, "libnccl": "2.19.3-1+cuda12.2"}
    (f,) = check_packages(families, "gpu08", drifted)
    assert (f.rule, f.host, f.expected, f.observed) == ("SW-VERSION", "gpu08", "2.21.5-1", "2.19.3-1+cuda12.2")
    assert "libnccl" in f.message
    # the Debian names mean nothing on EL: an EL host's versions are read under EL's
    assert check_packages(families, "gpu08", {"libnccl2": "2.19.3-1"}) == []
