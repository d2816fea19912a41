"""The deploy record: digests per host and component, what `--changed` selects, how a run updates it."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.api import load_checked
from clusterforge.cli.main import app
from clusterforge.deploy.api import DeployRequest, plans_for
from clusterforge.deploy.component import HostPlan, ManagedFile
from clusterforge.deploy.record import (
    HISTORY_FILE,
    RECORD_FILE,
    RecordError,
    changed_plans,
    component_digest,
    read_record,
    update_record,
)
from clusterforge.deploy.runner import HostResult

ROOT = Path(__file__).resolve().parents[3]
LAB = ROOT / "inventories" / "lab"


def _plans(env: Path = LAB) -> list[HostPlan]:
    return list(plans_for(env, DeployRequest(), None, load_checked(env).index).values())


def _targets(plans: list[HostPlan]) -> dict[str, str]:
    return {p.name: f"ssh:{p.address}" for p in plans}


def _bumped(tmp_path: Path) -> Path:
    env = tmp_path / "lab"
    shutil.copytree(LAB, env)
    services = env / "services.yaml"
    services.write_text(services.read_text().replace("nccl: 2.21.5-1", "nccl: 2.22.3-1"))
    return env


def test_digest_follows_content_mode_and_pins_but_never_a_secret() -> None:
    plan = _plans()[0]
    base = plan.component("base")
    assert base is not None
    d0 = component_digest(base)
    assert component_digest(base) == d0  # stable
    f = base.files[0]
    edited = dataclasses.replace(base, files=(dataclasses.replace(f, content=f.content + "#\n"), *base.files[1:]))
    chmod = dataclasses.replace(base, files=(dataclasses.replace(f, mode=0o600), *base.files[1:]))
    assert len({d0, component_digest(edited), component_digest(chmod)}) == 3
    secret = ManagedFile("/etc/apt/auth.conf.d/x.conf", "", {}, "machine m login a password one", 0o600, secret=True)
    other = dataclasses.replace(secret, content="machine m login a password two")
    assert component_digest(dataclasses.replace(base, files=(secret,))) == component_digest(
        dataclasses.replace(base, files=(other,)))


def test_nothing_on_record_means_everything_then_nothing_after_a_clean_run(tmp_path: Path) -> None:
    plans = _plans()
    targets = _targets(plans)
    assert changed_plans(plans, {}, targets) == plans
    results = [HostResult(p.name, "changed" if i % 2 else "ok") for i, p in enumerate(plans)]
    update_record(tmp_path, plans, results, engine="pyinfra", env=LAB, targets=targets)
    assert changed_plans(plans, read_record(tmp_path), targets) == []
    history = [json.loads(line) for line in (tmp_path / HISTORY_FILE).read_text().splitlines()]
    assert len(history) == 1 and history[0]["engine"] == "pyinfra" and len(history[0]["inventory"]) == 32
    assert sorted(history[0]["hosts"]["ok"] + history[0]["hosts"]["changed"]) == sorted(p.name for p in plans)


def test_an_inventory_change_selects_only_the_hosts_and_components_it_touches(tmp_path: Path) -> None:
    plans = _plans()
    update_record(tmp_path, plans, [HostResult(p.name, "ok") for p in plans], engine="pyinfra", env=LAB,
                  targets=_targets(plans))
    new = _plans(_bumped(tmp_path))
    todo = changed_plans(new, read_record(tmp_path), _targets(new))
    assert [p.name for p in todo] == [f"gpu0{i}" for i in range(1, 9)]
    assert {tuple(c.name for c in p.components) for p in todo} == {("repo", "nccl")}


def test_failed_hosts_stay_to_do_and_a_new_target_starts_over(tmp_path: Path) -> None:
    plans = _plans()
    targets = _targets(plans)
    results = [HostResult(p.name, "failed" if p.name == "gpu03" else "ok") for p in plans]
    results += [HostResult("gpu04", "unreachable")]
    update_record(tmp_path, plans, results, engine="ansible", env=LAB, targets=targets)
    todo = changed_plans(plans, read_record(tmp_path), targets)
    assert [p.name for p in todo] == ["gpu03"]
    moved = {**targets, "gpu05": "lab:0123abcd"}  # a re-created container: nothing it got is known
    again = changed_plans(plans, read_record(tmp_path), moved)
    assert [p.name for p in again] == ["gpu03", "gpu05"]
    assert again[1] == next(p for p in plans if p.name == "gpu05")  # every component


def test_a_partial_run_records_only_its_components(tmp_path: Path) -> None:
    plans = _plans()
    targets = _targets(plans)
    only_nccl = [dataclasses.replace(p, components=tuple(c for c in p.components if c.name == "nccl"))
                 for p in plans if p.component("nccl")]
    update_record(tmp_path, only_nccl, [HostResult(p.name, "changed") for p in only_nccl], engine="pyinfra",
                  env=LAB, targets=targets)
    todo = {p.name: [c.name for c in p.components] for p in changed_plans(plans, read_record(tmp_path), targets)}
    assert "nccl" not in todo["gpu01"] and "base" in todo["gpu01"]
    assert "sm01" in todo  # never deployed


def test_an_unreadable_record_is_an_error_not_a_full_redeploy(tmp_path: Path) -> None:
    (tmp_path / RECORD_FILE).write_text("{not json")
    with pytest.raises(RecordError, match="not a deploy record"):
        read_record(tmp_path)


def test_cli_changed_with_an_up_to_date_record_touches_no_host(tmp_path: Path) -> None:
    env = tmp_path / "lab-copy"  # no lab runs for this environment: the deploy would go to its hosts
    shutil.copytree(LAB, env)
    plans = _plans(env)
    record = tmp_path / "record"
    update_record(record, plans, [HostResult(p.name, "ok") for p in plans], engine="pyinfra", env=env,
                  targets=_targets(plans))
    plan_file = tmp_path / "result.json"
    result = CliRunner().invoke(app, ["deploy", str(env), "--yes", "--changed", "--record", str(record),
                                      "--plan-file", str(plan_file)])
    assert result.exit_code == 0, result.output
    assert "nothing changed since the last deploy on record" in result.output
    assert json.loads(plan_file.read_text())["hosts"] == {}
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / RECORD_FILE).write_text("[]")
    refused = CliRunner().invoke(app, ["deploy", str(env), "--yes", "--changed", "--record", str(bad)])
    assert refused.exit_code == 2
    assert "not a deploy record" in refused.output


def test_inventory_digest_covers_what_the_loader_reads(tmp_path: Path) -> None:
    import clusterforge.util.errors
    from clusterforge.deploy.record import inventory_digest

    env = tmp_path / "lab-copy"
    shutil.copytree(LAB, env)
    before = inventory_digest(env)
    (env / ".hidden.yaml").write_text("x: 1\n")  # the loader skips these: so does the digest
    (env / ".notes.yml").mkdir()
    assert inventory_digest(env) == before
    (env / "notes.yml").mkdir()  # a directory named like an inventory file: an error, never skipped (#27)
    with pytest.raises(clusterforge.util.errors.InventoryInvalid, match="inventory error"):
        inventory_digest(env)
    (env / "notes.yml").rmdir()
    (env / "nodes.yaml").write_text((env / "nodes.yaml").read_text() + "\n")
    assert inventory_digest(env) != before
