"""The validator on observations produced from the plan itself, with faults injected:
exactly the injected faults are reported, nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.api import Checked, load_checked
from clusterforge.cli.main import app
from clusterforge.parse import ibnetdiscover
from clusterforge.sim.ibnetdiscover import SimFabric, SimLink, from_index, render
from clusterforge.validate.fabric import diff_fabric
from clusterforge.validate.findings import Finding

ROOT = Path(__file__).resolve().parents[3]


def run(checked: Checked, fab: SimFabric) -> list[Finding]:
    return diff_fabric(checked.index, ibnetdiscover.parse(render(checked.index, fab)))


def test_clean_fabric_has_no_findings(lab: Checked) -> None:
    assert run(lab, from_index(lab.index)) == []


def test_removed_cable_is_missing(lab: Checked) -> None:
    fab = from_index(lab.index)
    fab.remove("C-00010")
    (f,) = run(lab, fab)
    assert f.rule == "FAB-MISSING" and f.severity == "error"
    assert f.subject == "gpu05 mlx5_1/1 - leaf-su02-r1/1"
    assert "C-00010" in f.action and "rack lab-su02-r01" in f.action
    assert f.inventory == ("cables", 9)


def test_swapped_cables_are_named_as_a_swap(lab: Checked) -> None:
    fab = from_index(lab.index)
    fab.swap("C-00001", "C-00003")
    (f,) = run(lab, fab)
    assert f.rule == "FAB-MISWIRED"
    assert "gpu02 and gpu01 are swapped on leaf-su01-r0 ports 1/2" in f.message
    assert f.action == "swap cables C-00003 and C-00001 at leaf-su01-r0 ports 1/2"


def test_degraded_link(lab: Checked) -> None:
    fab = from_index(lab.index)
    fab.degrade("C-00020", width="1x")
    (f,) = run(lab, fab)
    assert f.rule == "FAB-DEGRADED"
    assert (f.expected, f.observed) == ("4x HDR", "1x HDR")
    assert "C-00020" in f.action


def test_slower_speed_is_degraded(lab: Checked) -> None:
    fab = from_index(lab.index)
    fab.degrade("C-00005", width="4x", speed="EDR")
    (f,) = run(lab, fab)
    assert f.rule == "FAB-DEGRADED" and f.observed == "4x EDR"


def test_single_misplaced_cable_says_where_it_belongs(lab: Checked) -> None:
    fab = from_index(lab.index)
    link = fab.by_cable("C-00001")
    link.b = ("leaf-su01-r0", None, 15)  # moved to a free port
    (f,) = run(lab, fab)
    assert f.rule == "FAB-MISWIRED"
    assert f.message.startswith("gpu01 mlx5_0/1 reaches leaf-su01-r0/15, declared leaf-su01-r0/1")


def test_unknown_device_and_unexpected_link(lab: Checked) -> None:
    fab = from_index(lab.index)
    fab.guid[("stranger", "mlx5_0")] = "0x1111111111111111"
    fab.desc[("stranger", "mlx5_0")] = "stranger mlx5_0"
    fab.links.append(SimLink(("stranger", "mlx5_0", 1), ("leaf-infra01", None, 30), "4x", "HDR", "X1"))
    fab.links.append(SimLink(("leaf-infra01", None, 31), ("spine01", None, 31), "4x", "HDR", "X2"))
    findings = run(lab, fab)
    assert sorted(f.rule for f in findings) == ["FAB-UNEXPECTED", "FAB-UNKNOWN-DEVICE"]
    unexpected = next(f for f in findings if f.rule == "FAB-UNEXPECTED")
    assert unexpected.subject == "leaf-infra01/31 - spine01/31"


def test_duplicate_descriptions_still_bind_by_position(lab: Checked) -> None:
    fab = from_index(lab.index)
    fab.desc[("gpu01", "mlx5_0")] = "MT4123 ConnectX6   Mellanox Technologies"
    fab.desc[("gpu02", "mlx5_0")] = "MT4123 ConnectX6   Mellanox Technologies"
    findings = run(lab, fab)
    assert [f.rule for f in findings] == ["FAB-DUP-DESC"]
    assert "2 devices share" in findings[0].message


def test_combined_faults_are_each_reported_once(lab: Checked) -> None:
    fab = from_index(lab.index)
    fab.remove("C-00010")
    fab.swap("C-00001", "C-00003")
    fab.degrade("C-00020")
    rules = sorted(f.rule for f in run(lab, fab))
    assert rules == ["FAB-DEGRADED", "FAB-MISSING", "FAB-MISWIRED"]


def _lock(env: Path, fab: SimFabric, checked: Checked) -> Checked:
    source = env / "ibnetdiscover.txt"
    source.write_text(render(checked.index, fab))
    result = CliRunner().invoke(app, ["learn", str(env), "--from", str(source)])
    assert result.exit_code == 0, result.output
    assert "locked 7 switch(es), 19 HCA(s), 19 port GUID(s)" in result.output
    return load_checked(env)


def test_learn_then_replaced_switch_is_a_guid_mismatch(lab: Checked, lab_copy: Path) -> None:
    fab = from_index(lab.index)
    locked = _lock(lab_copy, fab, lab)
    assert locked.inv.guid_locks.switches["spine01"] == fab.guid[("spine01", None)]
    assert run(locked, fab) == []
    fab.replace("spine01", None, "0x0002c90300abcdef")
    (f,) = run(locked, fab)
    assert f.rule == "FAB-GUID-MISMATCH"
    assert f.observed == "0x0002c90300abcdef" and f.expected == locked.inv.guid_locks.switches["spine01"]
    assert "clusterforge learn" in f.action


def test_learn_binds_by_position_when_descriptions_are_default(lab: Checked, lab_copy: Path) -> None:
    fab = from_index(lab.index)
    fab.desc[("gpu03", "mlx5_0")] = "MT4123 ConnectX6   Mellanox Technologies"
    source = lab_copy / "ibnetdiscover.txt"
    source.write_text(render(lab.index, fab))
    result = CliRunner().invoke(app, ["learn", str(lab_copy), "--from", str(source), "--format", "json"])
    assert result.exit_code == 0, result.output
    import json

    data = json.loads(result.stdout)
    assert data["how"]["gpu03/mlx5_0"] == "position"
    assert data["how"]["gpu01/mlx5_0"] == "description"
    assert data["unbound"] == [] and data["not_seen"] == []


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_validate_cli_exit_codes_and_junit(lab: Checked, tmp_path: Path, fmt: str) -> None:
    saved = tmp_path / "saved"
    (saved / "fabric").mkdir(parents=True)
    fab = from_index(lab.index)
    (saved / "fabric" / "ibnetdiscover.txt").write_text(render(lab.index, fab))
    env = str(ROOT / "inventories" / "lab")
    clean = CliRunner().invoke(app, ["validate", env, "--from", str(saved), "--fabric-only", "--format", fmt])
    assert clean.exit_code == 0, clean.output
    fab.remove("C-00010")
    (saved / "fabric" / "ibnetdiscover.txt").write_text(render(lab.index, fab))
    junit = tmp_path / "report.xml"
    bad = CliRunner().invoke(
        app, ["validate", env, "--from", str(saved), "--fabric-only", "--format", fmt, "--junit", str(junit)]
    )
    assert bad.exit_code == 4, bad.output
    assert "FAB-MISSING" in bad.output
    assert 'failures="1"' in junit.read_text() and "C-00010" in junit.read_text()
    (saved / "hosts" / "gpu01").mkdir(parents=True)
    (saved / "hosts" / "gpu01" / "UNREACHABLE").write_text(
        "ssh: connect to host 198.18.10.10 port 22: No route"
    )
    unreachable = CliRunner().invoke(app, ["validate", env, "--from", str(saved), "--fabric-only", "--format", fmt])
    assert unreachable.exit_code == 5


def test_declared_link_across_rails_is_flagged(lab_copy: Path) -> None:
    fabric = lab_copy / "fabric.yaml"
    fabric.write_text(fabric.read_text().replace(
        "{id: C-00001, a: gpu01/mlx5_0/1, b: leaf-su01-r0/1,", "{id: C-00001, a: gpu01/mlx5_0/1, b: leaf-su01-r1/10,"))
    checked = load_checked(lab_copy)
    (f,) = run(checked, from_index(checked.index))
    assert (f.rule, f.subject) == ("FAB-RAIL", "gpu01 mlx5_0/1")
    assert "rail 0" in f.message and "rail-1 leaf" in f.message


def test_garbage_output_is_a_parse_finding_with_its_line(lab: Checked) -> None:
    from clusterforge.collect.store import Observations
    from clusterforge.validate.run import validate

    obs = Observations(hosts={"gpu01": {"ibstat": "CA 'mlx5_0'\n\tCA type: MT4123\n\tgarbage here\n"}},
                       root=Path("saved"))
    report = validate(lab.index, obs)
    parse = [f for f in report.findings if f.rule == "PARSE"]
    assert len(parse) == 1 and parse[0].message.startswith("saved/hosts/gpu01/ibstat.txt:")


def test_dual_port_hca_prints_its_port_count_and_validates_clean(lab: Checked) -> None:
    from clusterforge.model import Inventory
    from clusterforge.model.index import Index

    data = lab.inv.model_dump(mode="json")
    sm = next(p for p in data["profiles"] if p["name"] == "sm-node")
    sm["hcas"][0]["ports"].append({"port": 2, "rate": "HDR"})
    data["cables"].append({"id": "C-00099", "a": "sm01/mlx5_0/2", "b": "leaf-infra01/4", "media": "AOC",
                           "length_m": 3})
    index = Index(Inventory.model_validate(data))
    text = render(index, from_index(index))
    assert 'Ca\t2 "H-' in text  # ibnetdiscover prints the CA's port count, 2 here
    assert diff_fabric(index, ibnetdiscover.parse(text)) == []
