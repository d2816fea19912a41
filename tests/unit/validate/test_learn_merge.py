"""`learn` merges into the locks already there: nothing is lost silently, a changed GUID is refused."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from clusterforge.api import Checked
from clusterforge.cli.main import app
from clusterforge.sim.ibnetdiscover import SimFabric, from_index, render
from clusterforge.validate.learn import Learned, merge_locks

GENERATED = "guids.generated.yaml"


def _learn(env: Path, fab: SimFabric, checked: Checked, *extra: str) -> tuple[int, str, str]:
    source = env.parent / "ibnetdiscover.txt"
    source.write_text(render(checked.index, fab))
    result = CliRunner().invoke(app, ["learn", str(env), "--from", str(source), *extra])
    return result.exit_code, result.stdout, result.output


def _locks(env: Path) -> dict[str, dict[str, str]]:
    data = yaml.safe_load((env / GENERATED).read_text())
    return data["guid_locks"]  # type: ignore[no-any-return]


def _count(locks: dict[str, dict[str, str]]) -> int:
    return sum(len(v) for v in locks.values())


def _partial(fab: SimFabric, switch: str) -> SimFabric:
    fab.links = [link for link in fab.links if switch in (link.a[0], link.b[0])]
    return fab


def test_partial_fabric_keeps_every_lock(lab: Checked, lab_copy: Path) -> None:
    code, _, output = _learn(lab_copy, from_index(lab.index), lab)
    assert code == 0, output
    full = _locks(lab_copy)
    assert _count(full) == 45
    code, _, output = _learn(lab_copy, _partial(from_index(lab.index), "leaf-su01-r0"), lab)
    assert code == 0, output
    assert _locks(lab_copy) == full
    assert "not seen in this source: kept" in output
    assert "kept     leaf-infra01:" in output


def test_replace_drops_locks_the_source_does_not_show(lab: Checked, lab_copy: Path) -> None:
    assert _learn(lab_copy, from_index(lab.index), lab)[0] == 0
    code, stdout, output = _learn(
        lab_copy, _partial(from_index(lab.index), "leaf-su01-r0"), lab, "--replace", "--format", "json"
    )
    assert code == 0, output
    data = json.loads(stdout)
    after = _locks(lab_copy)
    assert 0 < _count(after) < 45
    assert len(data["dropped"]) == 45 - _count(after)
    assert "leaf-infra01" in {c["key"] for c in data["dropped"]} and "leaf-infra01" not in after["switches"]


def test_changed_guid_is_refused_as_a_replacement_until_replace(lab: Checked, lab_copy: Path) -> None:
    assert _learn(lab_copy, from_index(lab.index), lab)[0] == 0
    before = (lab_copy / GENERATED).read_text()
    locked = _locks(lab_copy)["switches"]["spine01"]
    fab = from_index(lab.index)
    fab.replace("spine01", None, "0x0002c90300abcdef")
    code, _, output = _learn(lab_copy, fab, lab)
    assert code == 1, output
    assert f"changed  spine01: locked {locked}, seen 0x0002c90300abcdef" in output
    assert "hardware" in output and "--replace" in output and "Nothing was written" in output
    assert (lab_copy / GENERATED).read_text() == before
    code, _, output = _learn(lab_copy, fab, lab, "--replace")
    assert code == 0, output
    assert _locks(lab_copy)["switches"]["spine01"] == "0x0002c90300abcdef"


def test_changed_port_guid_is_refused(lab: Checked, lab_copy: Path) -> None:
    assert _learn(lab_copy, from_index(lab.index), lab)[0] == 0
    fab = from_index(lab.index)
    fab.port_guid[("gpu01", "mlx5_0", 1)] = "0x0002c90300fedcba"
    code, stdout, output = _learn(lab_copy, fab, lab, "--format", "json")
    assert code == 1, output
    data = json.loads(stdout)
    assert data["refused"] is True and data["written"] is None
    assert [(c["section"], c["key"], c["seen"]) for c in data["changed"]] == [
        ("ports", "gpu01/mlx5_0/1", "0x0002c90300fedcba")
    ]


def test_dry_run_shows_the_refusal_and_writes_nothing(lab: Checked, lab_copy: Path) -> None:
    assert _learn(lab_copy, from_index(lab.index), lab)[0] == 0
    before = (lab_copy / GENERATED).read_text()
    fab = from_index(lab.index)
    fab.replace("spine01", None, "0x0002c90300abcdef")
    code, _, _ = _learn(lab_copy, fab, lab, "--dry-run", "--replace")
    assert code == 0
    assert (lab_copy / GENERATED).read_text() == before


def test_moved_guid_is_a_change_not_a_duplicate() -> None:
    old = {"switches": {}, "hcas": {"gpu01/mlx5_0": "0x0000000000000001"}, "ports": {}}
    learned = Learned(hcas={"gpu02/mlx5_0": "0x0000000000000001"})
    merge = merge_locks(old, learned)
    assert merge.refused and merge.changed[0].key == "gpu02/mlx5_0"
    assert "locked to gpu01/mlx5_0" in merge.changed[0].note
    replaced = merge_locks(old, learned, replace=True)
    assert replaced.locks["hcas"] == {"gpu02/mlx5_0": "0x0000000000000001"}


def test_learn_into_a_file_is_a_usage_error(lab: Checked, tmp_path: Path) -> None:
    env = tmp_path / "env.yaml"
    env.write_text("site: {name: x}\n")
    source = tmp_path / "ibnetdiscover.txt"
    source.write_text(render(lab.index, from_index(lab.index)))
    result = CliRunner().invoke(app, ["learn", str(env), "--from", str(source)])
    assert result.exit_code == 2
    assert "not one" in result.output and "Traceback" not in result.output


def test_another_fabric_is_refused_even_with_replace(lab: Checked, lab_copy: Path) -> None:
    assert _learn(lab_copy, from_index(lab.index), lab)[0] == 0
    before = (lab_copy / GENERATED).read_text()
    fab = from_index(lab.index)
    for i, key in enumerate(sorted(fab.guid, key=str)):
        fab.guid[key] = f"0x0002c9030{i:07x}"
        fab.desc[key] = f"other-fabric-{i}"
    fab.port_guid.clear()
    for extra in ((), ("--replace",)):
        code, _, output = _learn(lab_copy, fab, lab, *extra)
        assert code == 1, output
        assert "refused: none of the" in output and "another fabric, or the wrong file?" in output
        assert (lab_copy / GENERATED).read_text() == before


FOREIGN = Path(__file__).resolve().parents[2] / "fixtures" / "ibnetdiscover" / "psmn-x5-qdr-11switch-89ca.txt"


def test_another_fabrics_capture_is_refused_in_one_line(lab_copy: Path) -> None:
    result = CliRunner().invoke(app, ["learn", str(lab_copy), "--from", str(FOREIGN)])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines == [
        f"learn: refused: none of the 100 devices in {FOREIGN} (11 switches, 89 HCAs) belongs to inventory "
        f"{lab_copy} (7 switches, 11 nodes): another fabric, or the wrong file? Nothing was written "
        "(--verbose lists them)."
    ]
    assert not (lab_copy / GENERATED).exists()


def test_verbose_lists_what_another_fabrics_capture_shows(lab_copy: Path) -> None:
    result = CliRunner().invoke(app, ["learn", str(lab_copy), "--from", str(FOREIGN), "--verbose"])
    assert result.exit_code == 1
    assert "could not bind switch 0x0008f10500200b50" in result.output
    assert "declared but not seen:" in result.output
    assert "another fabric, or the wrong file?" in result.output
    assert not (lab_copy / GENERATED).exists()
