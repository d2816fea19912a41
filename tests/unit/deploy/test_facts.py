"""The probe fact: command text in a data file, captured outputs in -> records out."""

from __future__ import annotations

from deploy_helpers import DATA, data

from clusterforge.deploy.component import HostPlan
from clusterforge.deploy.facts import HostState, parse_state, state_script
from clusterforge.deploy.runner import probe_args


def test_probe_command_is_the_recorded_one(plans: dict[str, HostPlan]) -> None:
    for node in ("gpu01", "sm01"):
        assert state_script(**probe_args(plans[node])) + "\n" == (DATA / f"probe-{node}.sh").read_text()


def test_fact_class_builds_the_same_command(plans: dict[str, HostPlan]) -> None:
    assert HostState().command(**probe_args(plans["gpu01"])) == state_script(**probe_args(plans["gpu01"]))


def test_fresh_host() -> None:
    facts = parse_state(data("probe-gpu01-fresh.out"))
    assert facts.kernel
    assert facts.systemd is False
    assert facts.packages == {}
    assert facts.nvidia_loaded == ""
    assert facts.files["/etc/nccl.conf"] is None
    hosts = facts.files["/etc/hosts"]
    assert hosts is not None and hosts.mode == 0o644 and b"localhost" in (hosts.content or b"")


def test_converged_gpu_host() -> None:
    facts = parse_state(data("probe-gpu01-converged.out"))
    drv = facts.packages["nvidia-driver-550"]
    assert (drv.version, drv.installed, drv.held) == ("550.90.07-1", True, True)
    assert facts.package_version("libnccl2") == "2.21.5-1+cuda12.4"
    assert facts.ofed_info == "OFED-internal-24.04-0.7.0.0:"
    netplan = facts.files["/etc/netplan/60-clusterforge-ipoib.yaml"]
    assert netplan is not None and netplan.mode == 0o600


def test_converged_sm_host_sees_opensm() -> None:
    facts = parse_state(data("probe-sm01-converged.out"))
    assert facts.processes["opensm"] and all(p > 0 for p in facts.processes["opensm"])
    assert facts.package_version("opensm") is not None


def test_garbage_and_empty_sections_do_not_invent_records() -> None:
    facts = parse_state(["junk before any section", "@@cf dpkg", "not\ta-row", "@@cf file /x", "absent"])
    assert facts.packages == {} and facts.files == {"/x": None}


def test_services_only_parsed_where_listed() -> None:
    facts = parse_state(["@@cf systemd", "yes", "@@cf services", "opensm enabled active", "openibd disabled inactive"])
    assert facts.systemd and facts.services == {"opensm": ("enabled", "active"), "openibd": ("disabled", "inactive")}
