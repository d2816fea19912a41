"""Ansible's JSON inventory from the model, and the play recap back into per-host results."""

from __future__ import annotations

from clusterforge.deploy.ansible import inventory, parse_recap, plain, results_from_recap
from clusterforge.deploy.desired import HostPlan
from clusterforge.deploy.runner import SshSettings


def test_groups_by_role_and_rack_and_hostvars(plans: dict[str, HostPlan]) -> None:
    inv = inventory(list(plans.values()), SshSettings())
    assert inv["role_subnet_manager"]["hosts"] == ["sm01"]
    assert inv["rack_lab_su01_r01"]["hosts"] == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert set(inv["all"]["children"]) >= {"role_compute", "role_storage", "rack_lab_core01"}
    hv = plain(inv["_meta"]["hostvars"]["sm01"])
    assert hv["cf_components"] == ["repo", "base", "ofed", "ipoib", "opensm"]
    conf = next(f for f in hv["cf_opensm_files"] if f["dest"] == "/etc/opensm/opensm.conf")
    ours = next(f for f in plans["sm01"].files if f.dest == "/etc/opensm/opensm.conf")
    assert conf["content"] == ours.content and "sm_priority 15" in conf["content"]
    assert conf["mode"] == "0644"
    assert "ServerAliveInterval=5" in hv["ansible_ssh_common_args"]
    assert "StrictHostKeyChecking=yes" in hv["ansible_ssh_common_args"]


def test_recap_to_results(plans: dict[str, HostPlan]) -> None:
    text = """PLAY RECAP *****
gpu01                      : ok=56   changed=3    unreachable=0    failed=0    skipped=25   rescued=0    ignored=0
gpu02                      : ok=3    changed=0    unreachable=1    failed=0    skipped=0    rescued=0    ignored=0
sm01                       : ok=9    changed=0    unreachable=0    failed=1    skipped=0    rescued=0    ignored=0
"""
    recap = parse_recap(text)
    assert recap["gpu01"]["changed"] == 3
    res = {r.name: r.status for r in results_from_recap([plans[n] for n in ("gpu01", "gpu02", "sm01", "lus01")],
                                                        recap)}
    assert res == {"gpu01": "changed", "gpu02": "unreachable", "sm01": "failed", "lus01": "failed"}
