"""One test per real captured fixture: parser output == reviewed golden JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _parse_fixtures import DIR_TO_TOOL, actual, expected_path, fixture_files, fixture_id

FILES = fixture_files()


def test_every_fixture_has_source_and_golden() -> None:
    assert len(FILES) >= 83
    for path in FILES:
        assert path.with_suffix(".source").is_file(), path
        assert expected_path(path).is_file(), path


def test_fixture_dirs_are_known() -> None:
    fixtures = FILES[0].parents[1]
    for d in DIR_TO_TOOL:
        assert (fixtures / d).is_dir(), d


@pytest.mark.parametrize("path", FILES, ids=[fixture_id(p) for p in FILES])
def test_fixture(path: Path) -> None:
    expected = json.loads(expected_path(path).read_text(encoding="utf-8"))
    got = actual(path)
    # round-trip through JSON: proves the output is JSON-safe (no tuples/objects leak)
    assert json.loads(json.dumps(got)) == got
    assert got == expected


SHARED = Path(__file__).resolve().parents[4] / "shared" / "samples"  # the project's shared/ beside the checkout


@pytest.mark.parametrize("tool", ["mlxlink", "mlxfwmanager"])
def test_every_shared_sample_of_the_new_parsers_is_a_fixture(tool: str) -> None:
    """#33: the mlxlink and mlxfwmanager parsers read every sample in shared/samples: each is a fixture here,
    byte for byte, so its golden test above reads it."""
    samples = sorted((SHARED / tool).glob("*.txt"))
    assert samples, f"no {tool} samples in {SHARED}: shared/ is laid beside the checkout on every machine"
    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / tool
    for sample in samples:
        assert (fixtures / sample.name).read_bytes() == sample.read_bytes(), sample.name
