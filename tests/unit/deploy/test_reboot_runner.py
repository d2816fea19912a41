"""Reboot policy and per-host isolation of the runner (no SSH needed)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from clusterforge.deploy.component import HostPlan
from clusterforge.deploy.reboot import reboot_hosts, waves
from clusterforge.deploy.runner import HostResult, HostSession, SshSettings, run_batch, run_deploy
from clusterforge.model.hooks import hook_argv
from clusterforge.model.inventory import RebootPolicy


def test_waves_follow_the_policy(plans: dict[str, HostPlan]) -> None:
    sel = [plans[n] for n in ("gpu05", "gpu01", "sm01")]
    assert waves(sel, RebootPolicy(mode="none")) == []
    assert [[p.name for p in w] for w in waves(sel, RebootPolicy(mode="when-needed"))] == [["gpu05", "gpu01", "sm01"]]
    by_rack = waves(sel, RebootPolicy(mode="rolling-by-rack"))
    assert [[p.name for p in w] for w in by_rack] == [["sm01"], ["gpu01"], ["gpu05"]]


def test_drain_reboot_resume_order(plans: dict[str, HostPlan], tmp_path: Path) -> None:
    log = tmp_path / "log"
    policy = RebootPolicy(mode="when-needed", drain=["sh", "-c", f"echo drain {{host}} >> {log}"],
                          resume=["sh", "-c", f"echo resume {{host}} >> {log}"])

    def reboot(plan: HostPlan, deadline: float) -> str | None:
        log.open("a").write(f"reboot {plan.name}\n")
        return None if plan.name == "gpu01" else "did not come back"

    out = reboot_hosts([plans["gpu01"], plans["gpu02"]], policy, reboot)
    assert [(o.host, o.done) for o in out] == [("gpu01", True), ("gpu02", False)]
    assert log.read_text().split("\n")[:-1] == ["drain gpu01", "reboot gpu01", "resume gpu01",
                                                "drain gpu02", "reboot gpu02"]
    assert hook_argv(["scontrol", "update", "nodename={host}", "state=drain"], "gpu01")[2] == "nodename=gpu01"


def test_policy_none_never_reboots(plans: dict[str, HostPlan]) -> None:
    out = reboot_hosts([plans["gpu01"]], RebootPolicy(mode="none"), lambda p, d: "must not be called")
    assert not out[0].done and "policy 'none'" in out[0].message


def test_one_host_losing_its_connection_does_not_stop_the_others(plans: dict[str, HostPlan]) -> None:
    sel = [dataclasses.replace(plans[n], address="192.0.2.1") for n in ("gpu01", "gpu02", "sm01")]

    def fake(session: HostSession, plan: HostPlan, *, dry_run: bool, **_: object) -> HostResult:
        if plan.name == "gpu02":
            raise EOFError()  # what paramiko raises when the peer's sshd dies mid-run
        return HostResult(plan.name, "ok")

    results = run_batch(sel, SshSettings(), dry_run=False, parallel=4, deploy=fake)
    assert {r.name: r.status for r in results} == {"gpu01": "ok", "gpu02": "unreachable", "sm01": "ok"}
    assert "EOFError" in results[1].error


def test_max_fail_percent_stops_new_batches(plans: dict[str, HostPlan], monkeypatch: object) -> None:
    import clusterforge.deploy.runner as runner

    def fake_batch(batch: list[HostPlan], *a: object, **k: object) -> list[HostResult]:
        return [HostResult(p.name, "failed", error="x") for p in batch]

    setattr(runner, "run_batch", fake_batch)  # noqa: B010 - restored below
    try:
        sel = [plans[n] for n in ("gpu01", "gpu02", "gpu03", "gpu04")]
        res = run_deploy(sel, SshSettings(), batch=2, max_fail_percent=25)
    finally:
        setattr(runner, "run_batch", run_batch)  # noqa: B010
    assert [r.status for r in res] == ["failed", "failed", "skipped", "skipped"]


def test_group_hooks_drain_the_wave_once_and_resume_the_hosts_back(plans: dict[str, HostPlan],
                                                                    tmp_path: Path) -> None:
    """`{hosts}` hooks: one drain call for the wave, each host rebooted, one resume call for those back."""
    log = tmp_path / "log"
    policy = RebootPolicy(mode="when-needed", drain=["sh", "-c", f"echo drain $0 >> {log}", "{hosts}"],
                          resume=["sh", "-c", f"echo resume $0 >> {log}", "{hosts}"])

    def reboot(plan: HostPlan, deadline: float) -> str | None:
        log.open("a").write(f"reboot {plan.name}\n")
        return "did not come back" if plan.name == "gpu02" else None

    out = reboot_hosts([plans["gpu01"], plans["gpu02"], plans["gpu03"]], policy, reboot)
    assert [(o.host, o.done) for o in out] == [("gpu01", True), ("gpu02", False), ("gpu03", True)]
    assert "left drained" in out[1].message
    assert log.read_text().split("\n")[:-1] == ["drain gpu[01-03]", "reboot gpu01", "reboot gpu02", "reboot gpu03",
                                                "resume gpu[01,03]"]


def test_a_failed_group_drain_reboots_none_of_its_hosts(plans: dict[str, HostPlan]) -> None:
    policy = RebootPolicy(mode="when-needed", drain=["false", "{hosts}"], resume=["true", "{hosts}"])
    out = reboot_hosts([plans["gpu01"], plans["gpu02"]], policy, lambda p, d: "must not be called")
    assert [(o.host, o.done) for o in out] == [("gpu01", False), ("gpu02", False)]
    assert all(o.message.startswith("drain hook failed, not rebooted") for o in out)
