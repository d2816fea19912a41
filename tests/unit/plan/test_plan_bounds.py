"""`plan size` / `plan compare` options out of range are clean errors, and a scalable-unit size of 10^12 is
planned (refused) in the time of a leaf's radix, not of the number (issue #27, classes 5 and 6)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.catalog import catalog
from clusterforge.cli.main import app
from clusterforge.model.fabric import FabricSpec
from clusterforge.plan.design import _unit_size, _valid_su, switch_type
from clusterforge.plan.errors import PlanError

ROOT = Path(__file__).resolve().parents[3]
SIZE = ["plan", "size", "--nodes", "64", "--ports-per-node", "8", "--radix", "64"]
CLI = str(Path(sys.executable).parent / "clusterforge")


def _plain(text: str) -> str:
    return re.sub(r"[\s│╭╮╰╯─]+", " ", text)


@pytest.mark.parametrize("option", ["--su-size", "--spines", "--max-sus", "--leaves-per-rail", "--spine-radix",
                                    "--core-radix"])
@pytest.mark.parametrize("value", ["0", "-3"])
def test_plan_size_option_out_of_range_is_a_usage_error(option: str, value: str) -> None:
    result = CliRunner().invoke(app, [*SIZE, option, value])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"Invalid value for '{option}'" in _plain(result.output)


@pytest.mark.parametrize(("design", "says"), [
    ("X=A:hcas=0", "hcas=0 is out of range"),
    ("X=A:gpus=-1", "gpus=-1 is out of range"),
    ("X=A:su=0", "su=0 is out of range"),
    ("X=A:su=-4", "su=-4 is out of range"),
    ("X=A:gpus=99999999999", "gpus=99,999,999,999 is out of range"),
    ("X=A:su=1000000000000", "su=1,000,000,000,000 is out of range"),
])
def test_plan_compare_design_values_out_of_range(design: str, says: str) -> None:
    result = CliRunner().invoke(app, ["plan", "compare", "--design", design])
    assert result.exit_code == 3, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert f"plan error: design {design!r}: {says}" in result.output


@pytest.mark.parametrize("nodes", ["0", "-3"])
def test_plan_compare_nodes_out_of_range(nodes: str) -> None:
    result = CliRunner().invoke(app, ["plan", "compare", "--nodes", nodes])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--nodes'" in _plain(result.output)


def _old_per_rail(su: int, ratio: int, ports: int) -> int:
    """What _unit_size chose before: the smallest divisor n of su that leaves a valid leaf of su // n nodes."""
    return next((n for n in range(1, su + 1) if su % n == 0 and _valid_su(su // n, ratio, ports)), 1)


@pytest.mark.parametrize("ratio", [1, 2, 3, 4])
def test_the_bounded_search_chooses_what_the_trial_over_divisors_chose(ratio: int) -> None:
    cat = catalog()
    leaf = switch_type(cat, "QM8700", False, "leaf_model")
    spec = {1: "1:1", 2: "2:1", 3: "3:1", 4: "4:1"}[ratio]
    for su in range(1, 700):
        fs = FabricSpec.model_validate({"kind": "rail-optimized", "leaf_model": "QM8700", "su_size": su,
                                        "oversubscription": spec})
        try:
            got = _unit_size(fs, leaf, ratio, cat)
        except PlanError:
            got = None
        want = _old_per_rail(su, ratio, leaf.ports)
        if got is not None:
            assert got == (su, want), su


@pytest.mark.parametrize("args", [
    [*SIZE, "--su-size", "1000000000000"],
    [*SIZE, "--su-size", "999999999989"],  # a prime: no split at all
    [*SIZE, "--su-size", "1000000000000", "--leaves-per-rail", "3"],
])
def test_a_huge_unit_size_is_refused_quickly(args: list[str]) -> None:
    proc = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert "plan error: " in proc.stderr and "Traceback" not in proc.stderr


def test_check_of_an_inventory_with_a_huge_unit_size_is_quick(tmp_path: Path) -> None:
    env = tmp_path / "staging"
    shutil.copytree(ROOT / "inventories" / "staging", env)
    fabric = env / "fabric.yaml"
    fabric.write_text(fabric.read_text().replace("su_size: 16", "su_size: 1000000000000"))
    for cmd in (["check", str(env)], ["plan", str(env)]):
        proc = subprocess.run([CLI, *cmd], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 3, proc.stderr
        assert "Traceback" not in proc.stderr
