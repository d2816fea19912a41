"""Each case directory holds the files that break a small valid inventory (`_base`) and
`expected.txt`, the messages `clusterforge check` must print (file:line:col: path: message).
Files in a case replace the base file of the same name or add to it (list sections merge).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.cli.main import app

HERE = Path(__file__).parent
CASES = sorted(p.name for p in HERE.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def _assemble(case: str, dest: Path) -> Path:
    env = dest / "env"
    env.mkdir()
    for src in (HERE / "_base").glob("*.yaml"):
        shutil.copy(src, env / src.name)
    for src in (HERE / case).glob("*.yaml"):
        shutil.copy(src, env / src.name)
    return env


def test_base_inventory_is_valid(tmp_path: Path) -> None:
    env = _assemble_base(tmp_path)
    result = CliRunner().invoke(app, ["check", str(env)])
    assert result.exit_code == 0, result.output


def _assemble_base(tmp_path: Path) -> Path:
    env = tmp_path / "base"
    shutil.copytree(HERE / "_base", env)
    return env


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", CASES)
def test_error_case(case: str, tmp_path: Path) -> None:
    env = _assemble(case, tmp_path)
    expected = [line for line in (HERE / case / "expected.txt").read_text().splitlines() if line.strip()]
    assert expected, f"{case}/expected.txt is empty"
    result = CliRunner().invoke(app, ["check", str(env)])
    assert result.exit_code == 3, result.output
    printed = [line.replace(f"{env}/", "") for line in result.output.splitlines()]
    for line in expected:
        assert line in printed, f"missing: {line}\nprinted:\n" + "\n".join(printed)
    assert "Traceback" not in result.output
    reported = [p for p in printed if ": " in p and not p.endswith("in the inventory")]
    assert len(reported) == len(expected), "unexpected extra errors:\n" + "\n".join(reported)


def test_every_expected_issue_names_a_documented_rule() -> None:
    """Each expected line ends with its rule id, one of errors.RULES, each of which is in docs/inventory.md."""
    from clusterforge.util.errors import RULES

    docs = (HERE.parents[1] / "docs" / "inventory.md").read_text()
    seen: set[str] = set()
    for case in CASES:
        for line in (HERE / case / "expected.txt").read_text().splitlines():
            if line.strip():
                rule = line.rsplit(" [", 1)[-1].rstrip("]")
                assert rule in RULES, f"{case}: {line}"
                seen.add(rule)
    for rule in RULES:
        assert f"| `{rule}` |" in docs, f"{rule} is not in the docs/inventory.md table"
    assert len(seen) >= 15, sorted(seen)


def test_json_errors_carry_the_rule(tmp_path: Path) -> None:
    import json

    env = _assemble("duplicate-guid", tmp_path)
    result = CliRunner().invoke(app, ["check", str(env), "--format", "json"])
    assert result.exit_code == 3
    data = json.loads(result.stdout[: result.stdout.rindex("}") + 1])
    assert [e["rule"] for e in data["errors"]] == ["INV-DUP"]
