"""pyinfra's CLI on deploy/site.py: one operation per component and action, named for what it does, and a
converged action reports no change. Runs `pyinfra --dry --json` on @local with every path under a
temporary root (a dry run executes nothing; the one fact is a read-only probe)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusterforge.deploy.component import HostPlan
from clusterforge.deploy.desired import COMPONENTS
from clusterforge.deploy.ops import ACTIONS, op_name

ROOT = Path(__file__).resolve().parents[3]
PYINFRA = Path(sys.executable).with_name("pyinfra")
INVENTORY = """
import os
from pathlib import Path
from clusterforge.api import load_checked
from clusterforge.deploy.desired import host_plans
from clusterforge.deploy.options import DeployOptions, Mirror

_index = load_checked(Path(os.environ["CF_TEST_ENV"])).index
_opts = DeployOptions("lab", root=os.environ["CF_TEST_ROOT"],
                      repo=Mirror("http://198.19.77.1:8765/", "lab", ("main",), "trusted=yes"))
_plan = host_plans(_index, _opts)[os.environ["CF_TEST_HOST"]]
if os.environ.get("CF_TEST_OS"):  # another declared OS than this machine's
    from dataclasses import replace
    from clusterforge.deploy.os_target import os_target
    _plan = replace(_plan, os=os_target(os.environ["CF_TEST_OS"]))
cluster = [("@local", {"cf_plan": _plan})]
"""


def test_names_say_component_action_and_what(plans: dict[str, HostPlan]) -> None:
    nccl = plans["gpu01"].component("nccl")
    assert nccl is not None
    assert [p.package for p in nccl.pins][:2] == ["libnccl2", "libnccl-dev"]
    what = [f"{p.package}={p.version}" for p in nccl.pins] + list(nccl.packages)
    assert op_name(nccl, "packages") == f"nccl: packages ({', '.join(what)})"
    assert what[0].startswith("libnccl2=2.") and "+cuda" in what[0]
    assert op_name(nccl, "files") == "nccl: files (/etc/nccl.conf)"
    assert op_name(nccl, "services") is None  # nothing of that action: no operation
    sm = plans["sm01"].component("opensm")
    assert sm is not None and op_name(sm, "handler") == "opensm: re-sweep when its files changed"
    assert (op_name(sm, "files") or "").startswith("opensm: files (/etc/opensm/opensm.conf, ")
    with pytest.raises(ValueError, match="unknown action"):
        op_name(sm, "reboot")


def _pyinfra_dry(tmp_path: Path, host: str, declared_os: str = "") -> subprocess.CompletedProcess[str]:
    inv = tmp_path / "inventory.py"
    inv.write_text(INVENTORY)
    env = dict(os.environ, CF_TEST_ENV=str(ROOT / "inventories" / "lab"), CF_TEST_ROOT=str(tmp_path / "root"),
               CF_TEST_HOST=host, CF_TEST_OS=declared_os)
    return subprocess.run([str(PYINFRA), "--json", "--dry", str(inv), str(ROOT / "deploy" / "site.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)


def _dry_plan(tmp_path: Path, host: str) -> list[dict[str, object]]:
    proc = _pyinfra_dry(tmp_path, host)
    assert proc.returncode == 0, proc.stderr[-3000:]
    plan: list[dict[str, object]] = json.loads(proc.stdout)["plan"]
    return plan


@pytest.mark.skipif(not PYINFRA.exists(), reason="pyinfra's CLI is not installed")
def test_pyinfra_output_lists_each_component_action(tmp_path: Path) -> None:
    from clusterforge.api import load_checked
    from clusterforge.deploy.desired import host_plans
    from clusterforge.deploy.options import DeployOptions, Mirror

    ops = _dry_plan(tmp_path, "sm01")
    opts = DeployOptions("lab", root=str(tmp_path / "root"),
                         repo=Mirror("http://198.19.77.1:8765/", "lab", ("main",), "trusted=yes"))
    plan = host_plans(load_checked(ROOT / "inventories" / "lab").index, opts)["sm01"]
    expected = []
    for component in COMPONENTS:
        comp = plan.component(component)
        if comp is None:
            continue
        names = {a: op_name(comp, a) for a in ACTIONS}
        assert names["retire"] is None  # the `retire` component's only (deploy/retire.py)
        apt = comp.handler == "apt-update"
        order = [names["files"], names["handler"] if apt else None, names["packages"], names["hold"],
                 names["services"], names["modules"], None if apt else names["handler"]]
        expected += [n for n in order if n]
    assert [o["name"] for o in ops] == expected
    assert expected[:2] == [f"repo: files ({', '.join(f.dest for f in plan.component('repo').files)})",  # type: ignore[union-attr]
                            "repo: apt-get update when its files changed"]
    changed = {str(o["name"]).split(" (")[0] for o in ops if o["hosts_with_change"]}
    assert {"repo: files", "repo: apt-get update when its files changed", "opensm: files"} <= changed
    # the re-sweep acts on a running opensm (SIGHUP) or, under systemd, restarts the unit; on a host with
    # neither (this @local dry run reads the test machine's own facts) there is nothing to re-sweep
    opensm_here = subprocess.run(["pgrep", "-x", "opensm"], capture_output=True, check=False).returncode == 0
    resweeps = Path("/run/systemd/system").is_dir() or opensm_here
    assert ("opensm: re-sweep when its files changed" in changed) == resweeps, (resweeps, changed)

    # the repo's files in place (content and mode): that action, and its apt-get update, have nothing to do
    repo = plan.component("repo")
    assert repo is not None
    for f in repo.files:
        Path(f.dest).parent.mkdir(parents=True, exist_ok=True)
        Path(f.dest).write_text(f.content)
        Path(f.dest).chmod(f.mode)
    again = {str(o["name"]).split(" (")[0]: o["hosts_with_change"] for o in _dry_plan(tmp_path, "sm01")}
    assert again["repo: files"] == [] and again["repo: apt-get update when its files changed"] == []
    assert again["opensm: files"] == ["@local"]


@pytest.mark.skipif(not PYINFRA.exists(), reason="pyinfra's CLI is not installed")
def test_a_host_not_the_declared_os_gets_no_operation(tmp_path: Path) -> None:
    from clusterforge.deploy.os_target import OS_RELEASE_SCRIPT, mismatch, os_target, parse_found

    here = parse_found(subprocess.run(["sh", "-c", OS_RELEASE_SCRIPT], capture_output=True, text=True,
                                      timeout=10, check=True).stdout.split("\n"))
    other = next(r for r in ("rocky9", "ubuntu2404") if mismatch(os_target(r), here) is not None)
    proc = _pyinfra_dry(tmp_path, "sm01", other)
    assert proc.returncode != 0
    assert f"os: the inventory declares {other} (" in proc.stdout + proc.stderr
    assert not (tmp_path / "root").exists()  # nothing prepared, nothing written


def test_apt_lists_are_refreshed_once_per_host(plans: dict[str, HostPlan]) -> None:
    import hashlib
    from dataclasses import replace

    from deploy_helpers import data

    from clusterforge.deploy.facts import FileFact, parse_state
    from clusterforge.deploy.ops import APT_UPDATE, action_commands

    plan = plans["gpu01"]
    fresh = parse_state(data("probe-gpu01-fresh.out"))

    def updates(facts: object) -> list[str]:
        return [f"{c.name}/{a}" for c in plan.components for a in ACTIONS
                for line in action_commands(c, a, facts, plan) if line == APT_UPDATE]  # type: ignore[arg-type]

    # a fresh host: the repo's sources change, its handler refreshes apt, no packages op does it again
    assert updates(fresh) == ["repo/handler"]
    # the sources already in place: the first component that installs anything refreshes, once
    repo = plan.component("repo")
    assert repo is not None
    assert all(fresh.files.get(f.dest) is None for f in repo.files)  # missing on the fresh host
    files = dict(fresh.files) | {f.dest: FileFact(f.mode, hashlib.sha256(f.content.encode()).hexdigest(),
                                                  f.content.encode()) for f in repo.files}
    assert updates(replace(fresh, files=files)) == ["ofed/packages"]
