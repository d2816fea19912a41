"""Missing data is a finding at error level: `validate` never says "clean" about what it did not read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.api import Checked
from clusterforge.cli.main import app
from clusterforge.collect.store import Observations
from clusterforge.sim.ibnetdiscover import from_index, render
from clusterforge.validate.coverage import coverage_findings, expected_outputs
from clusterforge.validate.run import validate

ROOT = Path(__file__).resolve().parents[3]
LAB = str(ROOT / "inventories" / "lab")


def _complete(lab: Checked) -> Observations:
    """Every expected output present (content is not coverage's business)."""
    hosts = {h: dict.fromkeys(stems, "") for h, stems in expected_outputs(lab.index).items()}
    return Observations(fabric={"ibnetdiscover": ""}, hosts=hosts, root=Path("saved"))


def _run(*args: str) -> tuple[int, dict[str, object], str]:
    result = CliRunner().invoke(app, ["validate", LAB, *args, "--format", "json"])
    data = json.loads(result.stdout) if result.stdout.lstrip().startswith("{") else {}
    return result.exit_code, data, result.output


def _rules(data: dict[str, object]) -> list[tuple[str, str, str]]:
    findings = data["findings"]
    assert isinstance(findings, list)
    return [(f["rule"], f["severity"], f["subject"]) for f in findings]


def test_every_lab_host_is_expected(lab: Checked) -> None:
    expected = expected_outputs(lab.index)
    assert set(expected) == set(lab.index.nodes) and len(expected) == 11
    assert expected["gpu01"] == ("ibstat", "nvidia-smi-topo", "nvidia-smi-nvlink", "nvidia-smi-query-gpu")
    assert expected["sm01"] == ("ibstat",)


def test_complete_observations_have_no_coverage_findings(lab: Checked) -> None:
    assert coverage_findings(lab.index, _complete(lab)) == []


def test_empty_directory_is_an_error_not_a_warning(tmp_path: Path) -> None:
    code, data, output = _run("--from", str(tmp_path))
    assert code == 4, output
    rules = _rules(data)
    assert ("FAB-NO-DATA", "error", "fabric") in rules
    assert ("HOST-NO-DATA", "error", "gpu01") in rules and ("HOST-NO-DATA", "error", "sm01") in rules
    assert len(rules) == 12 and data["ok"] is False


def test_empty_host_directory_is_not_clean(lab: Checked, tmp_path: Path) -> None:
    (tmp_path / "fabric").mkdir()
    (tmp_path / "fabric" / "ibnetdiscover.txt").write_text(render(lab.index, from_index(lab.index)))
    (tmp_path / "hosts" / "gpu01").mkdir(parents=True)
    code, data, output = _run("--from", str(tmp_path))
    assert code == 4, output
    gpu01 = [f for f in data["findings"] if f["subject"] == "gpu01"]  # type: ignore[attr-defined]
    assert [f["rule"] for f in gpu01] == ["HOST-NO-DATA"]
    assert gpu01[0]["message"] == "gpu01: no outputs at all: the host was not checked"
    assert "ibstat.txt" in gpu01[0]["action"] and f"{tmp_path}/hosts/gpu01/" in gpu01[0]["action"]
    assert "clean" not in output


def test_unknown_host_directory_is_a_finding(lab: Checked) -> None:
    obs = _complete(lab)
    obs.hosts["gpu99"] = {"ibstat": ""}
    (f,) = coverage_findings(lab.index, obs)
    assert (f.rule, f.severity, f.subject) == ("HOST-UNKNOWN", "error", "gpu99")
    assert "saved/hosts/gpu99 names no node of the inventory" in f.message


def test_missing_gpu_outputs_are_named(lab: Checked) -> None:
    obs = _complete(lab)
    del obs.hosts["gpu02"]["nvidia-smi-topo"]
    del obs.hosts["gpu02"]["nvidia-smi-nvlink"]
    (f,) = coverage_findings(lab.index, obs)
    assert (f.rule, f.subject) == ("HOST-NO-DATA", "gpu02")
    assert f.message == (
        "gpu02: no nvidia-smi-topo output: GPU/HCA affinity was not checked; "
        "no nvidia-smi-nvlink output: NVLink was not checked"
    )
    assert f.expected == "nvidia-smi-topo.txt, nvidia-smi-nvlink.txt"


def test_per_hca_ibstat_files_count_as_ibstat(lab: Checked) -> None:
    obs = _complete(lab)
    del obs.hosts["sm01"]["ibstat"]
    obs.hosts["sm01"]["ibstat@mlx5_0"] = ""
    assert coverage_findings(lab.index, obs) == []


def test_unreachable_host_is_not_also_missing(lab: Checked) -> None:
    obs = _complete(lab)
    del obs.hosts["gpu03"]
    obs.unreachable["gpu03"] = "ssh: no route"
    assert coverage_findings(lab.index, obs) == []


def test_fabric_only_expects_no_host_outputs(lab: Checked) -> None:
    obs = Observations(fabric={"ibnetdiscover": render(lab.index, from_index(lab.index))})
    assert validate(lab.index, obs, fabric_only=True).findings == []
    rules = {f.rule for f in validate(lab.index, obs).findings}
    assert rules == {"HOST-NO-DATA"}


@pytest.mark.parametrize(
    ("option", "kind", "message"),
    [
        ("--junit", "dir", "is a directory; give a file name"),
        ("--junit", "parent-is-a-file", "is not a directory"),
        ("--save", "file", "exists and is not a directory"),
    ],
)
def test_output_path_of_the_wrong_kind_is_a_usage_error(tmp_path: Path, option: str, kind: str, message: str) -> None:
    target = tmp_path / "out"
    if kind == "dir":
        target.mkdir()
    elif kind == "file":
        target.write_text("x")
    else:
        (tmp_path / "file").write_text("x")
        target = tmp_path / "file" / "sub" / "report.xml"
    result = CliRunner().invoke(app, ["validate", LAB, "--from", str(tmp_path), option, str(target)])
    assert result.exit_code == 2, result.output
    assert f"{option} {target}: " in result.output and message in result.output
    assert "Traceback" not in result.output


def test_from_a_file_is_a_usage_error(tmp_path: Path) -> None:
    f = tmp_path / "saved.txt"
    f.write_text("x")
    code, _, output = _run("--from", str(f))
    assert code == 2 and "not a directory of saved outputs" in output


def test_limit_keeps_the_fabric_data_finding(tmp_path: Path) -> None:
    code, data, output = _run("--from", str(tmp_path), "--limit", "gpu01")
    assert code == 4, output
    assert sorted(_rules(data)) == [("FAB-NO-DATA", "error", "fabric"), ("HOST-NO-DATA", "error", "gpu01")]
