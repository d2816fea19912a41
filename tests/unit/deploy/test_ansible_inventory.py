"""Ansible's JSON inventory from the model, and the callback's events back into per-host results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clusterforge.deploy.ansible import inventory, plain, read_events, results_from_events
from clusterforge.deploy.component import HostPlan
from clusterforge.deploy.runner import SshSettings


def test_groups_by_role_and_rack_and_hostvars(plans: dict[str, HostPlan]) -> None:
    inv = inventory(list(plans.values()), SshSettings())
    assert inv["role_subnet_manager"]["hosts"] == ["sm01"]
    assert inv["rack_lab_su01_r01"]["hosts"] == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert set(inv["all"]["children"]) >= {"role_compute", "role_storage", "rack_lab_core01"}
    hv = plain(inv["_meta"]["hostvars"]["sm01"])
    assert hv["cf_components"] == ["repo", "base", "ofed", "ipoib", "opensm", "monitoring"]
    conf = next(f for f in hv["cf_opensm_files"] if f["dest"] == "/etc/opensm/opensm.conf")
    ours = next(f for f in plans["sm01"].files if f.dest == "/etc/opensm/opensm.conf")
    assert conf["content"] == ours.content and "sm_priority 15" in conf["content"]
    assert conf["mode"] == "0644"
    assert "ServerAliveInterval=5" in hv["ansible_ssh_common_args"]
    assert "StrictHostKeyChecking=yes" in hv["ansible_ssh_common_args"]


def test_events_to_results(plans: dict[str, HostPlan]) -> None:
    # the shape deploy/callback_plugins/clusterforge_events.py writes (its run is tested in test_ansible_literal)
    events: list[dict[str, Any]] = [
        {"event": "ok", "host": "gpu01", "task": "Write configuration files", "role": "cf_common",
         "component": "nccl", "changed": True},
        {"event": "ok", "host": "gpu01", "task": "Read the installed packages", "role": "cf_common",
         "changed": False},
        {"event": "unreachable", "host": "gpu02", "task": "Check whether netplan is installed", "role": "cf_ipoib",
         "msg": "Failed to connect to the host via ssh"},
        {"event": "failed", "host": "sm01", "task": "Hold pinned packages", "role": "cf_common", "ignored": True,
         "msg": "ignored, not the failure"},
        {"event": "failed", "host": "sm01", "task": "Install pinned packages", "role": "cf_common",
         "component": "opensm", "msg": "no package matching 'opensm=9'"},
        {"event": "stats", "hosts": {
            "gpu01": {"ok": 56, "changed": 3, "unreachable": 0, "failures": 0, "skipped": 25},
            "gpu02": {"ok": 3, "changed": 0, "unreachable": 1, "failures": 0, "skipped": 0},
            "sm01": {"ok": 9, "changed": 0, "unreachable": 0, "failures": 1, "skipped": 0},
            "gpu03": {"ok": 9, "changed": 0, "unreachable": 0, "failures": 0, "skipped": 2}}},
    ]
    names = ("gpu01", "gpu02", "sm01", "gpu03", "lus01")
    res = {r.name: r for r in results_from_events([plans[n] for n in names], events, "ERROR! boom\n")}
    assert {n: r.status for n, r in res.items()} == {
        "gpu01": "changed", "gpu02": "unreachable", "sm01": "failed", "gpu03": "ok", "lus01": "failed"}
    assert res["gpu01"].notes == ["ansible: changed=3 ok=56", "changed: nccl: Write configuration files"]
    assert res["gpu02"].error.startswith("unreachable: ipoib: Check whether netplan is installed: Failed to connect")
    assert res["sm01"].error == "failed: opensm: Install pinned packages: no package matching 'opensm=9'"
    assert res["lus01"].error == "no result from ansible-playbook: ERROR! boom"


def test_no_events_at_all_fails_every_host_with_the_output(plans: dict[str, HostPlan], tmp_path: Path) -> None:
    assert read_events(tmp_path / "missing.jsonl") == []
    res = results_from_events([plans["gpu01"]], [], "ERROR! the playbook could not be parsed")
    assert res[0].status == "failed" and "could not be parsed" in res[0].error
