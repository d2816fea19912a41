"""Issue 21.7: the deploy starts the highest-priority SM's OpenSM first, waits for a MASTER, then the standbys'.

OpenSM hands mastership to a higher-priority SM only on a heavy sweep, which a quiet fabric never has: when
both SM nodes start at once the wrong one may stay master. The unit-level wait covered rail planes only;
this is the deploy's own order, the same on pyinfra (the runner, the CLI's operations) and Ansible."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, ClassVar

import gevent  # type: ignore[import-untyped]
import pytest

import clusterforge.deploy.runner as runner
from clusterforge.api import load_checked
from clusterforge.deploy.changes import WAIT_MASTER_SCRIPT
from clusterforge.deploy.component import HostPlan
from clusterforge.deploy.desired import host_plans
from clusterforge.deploy.facts import HostFacts
from clusterforge.deploy.options import DeployOptions
from clusterforge.deploy.os_target import OsFound
from clusterforge.deploy.runner import HostResult, SshSettings, run_batch, run_deploy

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def prod_plans() -> dict[str, HostPlan]:
    return host_plans(load_checked(ROOT / "inventories" / "prod").index, DeployOptions("prod"))


def _sm_only(plans: dict[str, HostPlan], *names: str) -> list[HostPlan]:
    return [dataclasses.replace(plans[n], components=tuple(c for c in plans[n].components if c.name == "opensm"))
            for n in names]


def test_the_plans_name_the_order(prod_plans: dict[str, HostPlan]) -> None:
    top, standby = prod_plans["sm01"].component("opensm"), prod_plans["sm02"].component("opensm")
    assert top is not None and standby is not None
    assert top.wait_master and not top.start_after
    assert standby.start_after == "sm01" and not standby.wait_master


def test_one_sm_node_waits_for_nobody() -> None:
    plans = host_plans(load_checked(ROOT / "inventories" / "lab").index, DeployOptions("lab"))
    comp = plans["sm01"].component("opensm")
    assert comp is not None and not comp.wait_master and not comp.start_after


class _Session:
    """A host that runs nothing: it records when each script ran; the top SM answers as MASTER after a delay."""

    log: ClassVar[list[tuple[float, str, str]]] = []
    master_after_s = 0.3

    def __init__(self, state: object, name: str) -> None:
        self.name = name

    def connect(self) -> None:
        pass

    def facts(self, plan: HostPlan) -> HostFacts:
        # nothing installed, opensm not running: every change is needed
        return HostFacts(systemd=True, os=OsFound("debian", "12"))

    def run(self, script: str, what: str, timeout: int = 0) -> str:
        if script == WAIT_MASTER_SCRIPT:
            gevent.sleep(self.master_after_s)
        self.log.append((time.monotonic(), self.name, what))
        return ""

    def close(self) -> None:
        pass


@pytest.fixture
def session(monkeypatch: pytest.MonkeyPatch) -> type[_Session]:
    _Session.log = []
    monkeypatch.setattr(runner, "HostSession", _Session)
    return _Session


@pytest.mark.parametrize("order", [("sm01", "sm02"), ("sm02", "sm01")])
def test_the_runner_starts_the_standby_after_the_master_answers(prod_plans: dict[str, HostPlan],
                                                              session: type[_Session], order: tuple[str, str]) -> None:
    results = run_batch(_sm_only(prod_plans, *order), SshSettings(), dry_run=False, parallel=4)
    assert {r.name: r.status for r in results} == {"sm01": "changed", "sm02": "changed"}
    events = [(name, what) for _, name, what in session.log]
    assert events.index(("sm01", "opensm: wait for a master SM")) < events.index(("sm02", "opensm: apply"))
    assert events.index(("sm01", "opensm: apply")) < events.index(("sm01", "opensm: wait for a master SM"))


def test_a_failed_master_does_not_hold_the_standby(prod_plans: dict[str, HostPlan], session: type[_Session],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    real_run = _Session.run

    def failing(self: _Session, script: str, what: str, timeout: int = 0) -> str:
        if self.name == "sm01" and what == "opensm: apply":
            raise runner.HostFailure("opensm: apply failed")
        return real_run(self, script, what, timeout)

    monkeypatch.setattr(_Session, "run", failing)
    t0 = time.monotonic()
    results = run_batch(_sm_only(prod_plans, "sm02", "sm01"), SshSettings(), dry_run=False, parallel=4)
    assert {r.name: r.status for r in results} == {"sm01": "failed", "sm02": "changed"}
    assert time.monotonic() - t0 < 5


def test_a_standby_deployed_alone_does_not_wait(prod_plans: dict[str, HostPlan], session: type[_Session]) -> None:
    t0 = time.monotonic()
    (result,) = run_batch(_sm_only(prod_plans, "sm02"), SshSettings(), dry_run=False, parallel=4)
    assert result.status == "changed" and time.monotonic() - t0 < 5


def test_a_dry_run_waits_for_nothing(prod_plans: dict[str, HostPlan], session: type[_Session]) -> None:
    results = run_batch(_sm_only(prod_plans, "sm02", "sm01"), SshSettings(), dry_run=True, parallel=4)
    assert {r.status for r in results} == {"planned"}
    assert session.log == []


def test_batches_put_the_top_sm_node_first(prod_plans: dict[str, HostPlan], monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def fake_batch(batch: list[HostPlan], *a: Any, **k: Any) -> list[HostResult]:
        seen.append([p.name for p in batch])
        return [HostResult(p.name, "ok") for p in batch]

    monkeypatch.setattr(runner, "run_batch", fake_batch)
    names = ["gpu0001", "sm02", "gpu0002", "sm01"]
    run_deploy([prod_plans[n] for n in names], SshSettings(), batch=2)
    assert seen[0][0] == "sm01"
    assert sorted(n for b in seen for n in b) == sorted(names)


PYINFRA_INVENTORY = """
import os
from pathlib import Path
from clusterforge.api import load_checked
from clusterforge.deploy.desired import host_plans
from clusterforge.deploy.options import DeployOptions

_index = load_checked(Path(os.environ["CF_TEST_ENV"])).index
_plans = host_plans(_index, DeployOptions("prod", root=os.environ["CF_TEST_ROOT"]))
cluster = [("@local", {"cf_plan": _plans[os.environ["CF_TEST_HOST"]]})]
"""


def _opensm_ops(tmp_path: Path, host: str) -> list[str]:
    import os
    import subprocess
    import sys

    inv = tmp_path / "inventory.py"
    inv.write_text(PYINFRA_INVENTORY)
    env = dict(os.environ, CF_TEST_ENV=str(ROOT / "inventories" / "prod"), CF_TEST_ROOT=str(tmp_path / "root"),
               CF_TEST_HOST=host)
    proc = subprocess.run([str(Path(sys.executable).with_name("pyinfra")), "--json", "--dry", str(inv),
                           str(ROOT / "deploy" / "site.py")], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    import json

    return [str(o["name"]) for o in json.loads(proc.stdout)["plan"] if str(o["name"]).startswith("opensm: ")]


def test_pyinfra_cli_lines_the_standby_start_up_after_the_masters_wait(tmp_path: Path) -> None:
    """pyinfra's CLI runs one operation on every host before the next, in the order of their call lines
    (deploy/ops.py): the top SM's wait is on a line before the standby's services and re-sweep."""
    import inspect

    from clusterforge.deploy import ops

    top, standby = _opensm_ops(tmp_path, "sm01"), _opensm_ops(tmp_path, "sm02")
    assert top[-1] == "opensm: wait for a master SM before the standbys start"
    assert top[-3].startswith("opensm: services (opensm)") and "after" not in top[-3]
    assert standby[-2:] == ["opensm: services (opensm), after sm01's",
                            "opensm: re-sweep when its files changed, after sm01's"]
    source = inspect.getsource(ops.deploy_component)
    wait_line = source.index("cast(Any, wait_master)(plan")
    late_services = source.index('name=f"{name}, after {comp.start_after}\'s")')
    assert wait_line < late_services


def test_ansible_gets_the_order_as_hostvars_and_plays_it_second(prod_plans: dict[str, HostPlan]) -> None:
    import yaml

    from clusterforge.deploy.ansible import inventory, plain

    hv = plain(inventory(list(prod_plans.values()), SshSettings())["_meta"]["hostvars"])
    assert (hv["sm01"]["cf_opensm_wait_master"], hv["sm01"]["cf_opensm_start_after"]) == (True, "")
    assert (hv["sm02"]["cf_opensm_wait_master"], hv["sm02"]["cf_opensm_start_after"]) == (False, "sm01")
    assert (hv["gpu0001"]["cf_opensm_wait_master"], hv["gpu0001"]["cf_opensm_start_after"]) == (False, "")
    plays = yaml.safe_load((ROOT / "deploy" / "site.yml").read_text())
    assert len(plays) == 2 and "serial" not in plays[1]  # every host at once: each task on all before the next
    (task,) = plays[1]["tasks"]
    assert task["ansible.builtin.include_role"] == {"name": "cf_opensm", "tasks_from": "start.yml"}
    main = yaml.safe_load((ROOT / "roles" / "cf_opensm" / "tasks" / "main.yml").read_text())
    assert main[0]["vars"]["cf_common_services"] == "{{ [] if cf_opensm_start_after else cf_opensm_services }}"
    start = yaml.safe_load((ROOT / "roles" / "cf_opensm" / "tasks" / "start.yml").read_text())
    names = [t["name"] for t in start]
    assert names.index("Wait for a master SM before the standbys start (at most 60 s)") < \
        names.index("Start OpenSM on a standby SM node, after the master's")
    handler = (ROOT / "roles" / "cf_opensm" / "handlers" / "main.yml").read_text()
    assert "systemctl try-restart" in handler and "systemctl restart" not in handler
