"""`clusterforge diff`: two directories, or an environment against a git revision of itself."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from _day2_util import LAB
from typer.testing import CliRunner

from clusterforge.cli.main import app


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=cwd, check=True,
                   capture_output=True)


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    """A git repository with the lab inventory committed; returns the environment's path."""
    env = tmp_path / "inventories" / "lab"
    shutil.copytree(LAB, env)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "lab")
    return env


def _bump_nccl(env: Path) -> None:
    services = env / "services.yaml"
    services.write_text(services.read_text().replace("nccl: 2.21.5-1", "nccl: 2.22.3-1"))


def test_no_change_against_head(repo: Path) -> None:
    result = CliRunner().invoke(app, ["diff", str(repo), "--rev", "HEAD", "--exit-code"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"{repo}: no change"


def test_working_copy_against_head_text_json_and_exit_code(repo: Path, tmp_path: Path) -> None:
    _bump_nccl(repo)
    runner = CliRunner()
    text = runner.invoke(app, ["diff", str(repo), "--rev", "HEAD"])
    assert text.exit_code == 0, text.output
    assert "8 host(s) to deploy, 0 to drain, 0 reboot(s)" in text.output
    assert "libnccl2: 2.21.5-1+cuda12.4 -> 2.22.3-1+cuda12.4" in text.output
    out = tmp_path / "plan.json"
    js = runner.invoke(app, ["diff", str(repo), "--rev", "HEAD", "--format", "json", "--output", str(out),
                             "--exit-code"])
    assert js.exit_code == 1  # --exit-code: there is something to do
    data = json.loads(js.output)
    saved = json.loads(out.read_text())  # the plan file: the JSON plan plus meta and digest (planfile.py)
    assert data == {k: v for k, v in saved.items() if k not in ("meta", "digest")}
    assert set(saved) - set(data) == {"meta", "digest"}
    deploys = [s for s in data["steps"] if s["phase"] == "deploy"]
    # one wave-wide deploy over both racks (the deploy runs its hosts in parallel), not one per rack
    assert [s["rack"] for s in deploys] == [None]
    assert deploys[0]["argv"][deploys[0]["argv"].index("--limit") + 1] == "gpu[01-08]"
    assert all("nccl" in s["argv"] for s in deploys)


def test_two_directories(repo: Path, tmp_path: Path) -> None:
    new = tmp_path / "lab-new"
    shutil.copytree(repo, new)
    _bump_nccl(new)
    result = CliRunner().invoke(app, ["diff", str(repo), str(new), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["summary"]["hosts_to_deploy"] == 8


def test_bad_revision_and_missing_new_are_usage_errors(repo: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(app, ["diff", str(repo), "--rev", "no-such-rev"])
    assert bad.exit_code == 2
    assert "no-such-rev" in bad.output
    assert "Traceback" not in bad.output
    alone = runner.invoke(app, ["diff", str(repo)])
    assert alone.exit_code == 2
    assert "give NEW, or --rev REV" in alone.output


def test_invalid_new_inventory_is_reported_with_its_location(repo: Path) -> None:
    nodes = repo / "nodes.yaml"
    nodes.write_text(nodes.read_text().replace("rack: lab-su01-r01, u: 6", "rack: lab-su01-r01, u: 99"))
    result = CliRunner().invoke(app, ["diff", str(repo), "--rev", "HEAD"])
    assert result.exit_code == 3
    assert "the new inventory is invalid" in result.output
    assert "nodes.yaml:4:" in result.output and "nodes[1].u" in result.output


def _record_a_deploy(env: Path, record: Path) -> None:
    from clusterforge.api import load_checked
    from clusterforge.deploy.api import DeployRequest, plans_for
    from clusterforge.deploy.record import update_record
    from clusterforge.deploy.runner import HostResult

    plans = list(plans_for(env, DeployRequest(), None, load_checked(env).index).values())
    update_record(record, plans, [HostResult(p.name, "ok") for p in plans], engine="pyinfra", env=env,
                  targets={p.name: f"ssh:{p.address}" for p in plans})


def test_deployed_compares_with_the_commit_of_the_last_deploy(repo: Path, tmp_path: Path) -> None:
    record = tmp_path / "record"
    runner = CliRunner()
    none = runner.invoke(app, ["diff", str(repo), "--deployed", "--record", str(record)])
    assert none.exit_code == 2 and "no deploy with a git commit on record" in none.output
    _record_a_deploy(repo, record)  # deployed from a clean working copy at HEAD
    _bump_nccl(repo)  # then the inventory changed
    result = runner.invoke(app, ["diff", str(repo), "--deployed", "--record", str(record)])
    assert result.exit_code == 0, result.output
    assert "8 host(s) to deploy" in result.output
    assert "uncommitted" not in result.output
    _record_a_deploy(repo, tmp_path / "dirty")  # deployed with the bump not committed
    noted = runner.invoke(app, ["diff", str(repo), "--deployed", "--record", str(tmp_path / "dirty")])
    assert "the last deploy ran with uncommitted inventory changes" in noted.output


def test_a_plan_the_verifier_rejects_is_an_internal_error_not_a_plan(repo: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from clusterforge.day2 import verify as verifier

    def broken(plan: object, old: object, new: object) -> list[verifier.Violation]:
        return [verifier.Violation(3, "SLOT", "gpu05 is installed at lab-su01-r01 U14, occupied by gpu04")]

    monkeypatch.setattr(verifier, "verify", broken)
    _bump_nccl(repo)
    out = tmp_path / "plan.json"
    result = CliRunner().invoke(app, ["diff", str(repo), "--rev", "HEAD", "--output", str(out)])
    assert result.exit_code == 70
    assert "internal error" in result.output and "step 3: SLOT: gpu05 is installed" in result.output
    assert "deploy" not in result.output and not out.exists()
