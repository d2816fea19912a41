"""Odd tool output and hostile input to `parse`: a ParseError with the line, or a clean refusal."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from _parse_helpers import fixture, raises_at
from typer.testing import CliRunner

from clusterforge.cli.main import app
from clusterforge.parse import nccl_tests, to_jsonable

RUN = "nccl-tests/ncclebpf-mpirun-tag-output-2rank-same-gpu-socket-rtx5090"
PARAMS = "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 134217728 step: 2(factor)"


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("# nThread 1 nGpus --1 minBytes 1048576", "bad token '--1'"),
        ("# nThread 1 nGpus ² minBytes 1048576", "bad token '²'"),
        ("# nThread 1 nGpus 1 minBytes", "parameter 'minBytes' has no value"),
        ("# nThread 1 nGpus 1 2 minBytes 8", "parameter value '2' without a name"),
    ],
)
def test_odd_parameter_lines_are_parse_errors_with_the_line(bad: str, message: str) -> None:
    text = fixture(RUN)
    assert PARAMS in text
    lines = text.split("\n")
    idx = next(i for i, ln in enumerate(lines) if PARAMS in ln)
    lines[idx] = "[1,0]<stdout>:" + bad
    err = raises_at(nccl_tests.parse, "\n".join(lines), idx + 1)
    assert message in err.message and err.line == lines[idx]


@pytest.mark.parametrize("digit", ["²", "٣"])
def test_non_ascii_digits_in_a_row_are_parse_errors(digit: str) -> None:
    text = fixture(RUN)
    row = "     1048576        262144     float     sum      -1  4366.11    0.24    0.24       0"
    assert row in text
    bad = text.replace(row, row[:-1] + digit, 1)
    err = raises_at(nccl_tests.parse, bad)
    assert "#wrong" in err.message


def test_nan_busbw_is_null_in_json_and_fails_the_run() -> None:
    text = fixture(RUN)
    text = text.replace("-1  4366.11    0.24    0.24", "-1  4366.11    0.24     nan", 1)
    text = text.replace("# Avg bus bandwidth    : 1.58183", "# Avg bus bandwidth    : nan", 1)
    result = nccl_tests.parse(text)
    first = result.rows[0].out_of_place
    assert first is not None and first.busbw is not None and math.isnan(first.busbw)
    assert result.avg_busbw is not None and math.isnan(result.avg_busbw)
    assert result.status == "failed"
    data = to_jsonable("nccl-tests", result)
    assert data["rows"][0]["out_of_place"]["busbw"] is None and data["avg_busbw"] is None
    assert "NaN" not in json.dumps(data, allow_nan=False)


def test_cli_json_never_prints_bare_nan(tmp_path: Path) -> None:
    src = tmp_path / "nccl.txt"
    src.write_text(fixture(RUN).replace("-1  4366.11    0.24    0.24", "-1  4366.11    0.24     nan", 1))
    result = CliRunner().invoke(app, ["parse", "nccl-tests", str(src)])
    assert result.exit_code == 0, result.output
    assert "NaN" not in result.stdout
    data = json.loads(result.stdout)
    assert data["rows"][0]["out_of_place"]["busbw"] is None


def test_cli_odd_parameter_line_exits_2_with_file_and_line(tmp_path: Path) -> None:
    src = tmp_path / "nccl.txt"
    src.write_text(fixture(RUN).replace("nGpus 1 minBytes", "nGpus --1 minBytes", 1))
    result = CliRunner().invoke(app, ["parse", "nccl-tests", str(src)])
    assert result.exit_code == 2
    assert f"{src}:11: bad token '--1' in the parameter line" in result.output
    assert "Traceback" not in result.output


def test_parse_input_is_capped(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(b"\0" * (1024 * 1024 + 1))
    result = CliRunner().invoke(app, ["parse", "ibstat", str(big), "--max-mb", "1"])
    assert result.exit_code == 2
    assert f"{big}: input is larger than 1 MB (raise the cap with --max-mb)" in result.output
    exact = tmp_path / "exact.txt"
    exact.write_bytes(b"\0" * (1024 * 1024))
    result = CliRunner().invoke(app, ["parse", "ibstat", str(exact), "--max-mb", "1"])
    assert result.exit_code == 2 and "larger than" not in result.output  # read, then a parse error


def test_parse_of_an_endless_device_is_refused_unread() -> None:
    result = CliRunner().invoke(app, ["parse", "ibstat", "/dev/zero", "--max-mb", "1"])
    assert result.exit_code == 2 and "/dev/zero: not a regular file" in result.output


def test_parse_stdin_is_capped_too() -> None:
    result = CliRunner().invoke(app, ["parse", "ibstat", "-", "--max-mb", "1"], input=b"x" * (1024 * 1024 + 5))
    assert result.exit_code == 2 and "-: input is larger than 1 MB" in result.output


# -- nvidia-smi topo -m: rows whose cells are separated by doubled tabs -------------------------
TOPO_HEADER = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"


@pytest.mark.parametrize(
    ("rows", "affinity"),
    [
        # NUMA Affinity N/A: nvidia-smi doubles the tabs around it (as the real Tesla P4 fixture shows)
        ("GPU0\t X \tPHB\t0-7\t\tN/A\t\tN/A\nGPU1\tPHB\t X \t0-7\t\tN/A\t\tN/A\n",
         [("0-7", None, None), ("0-7", None, None)]),
        # a re-tabbed copy: every separator doubled, matrix cells included
        ("GPU0\t\t X \t\tNV4\t\t0-31\t\t0\t\t\t\tN/A\nGPU1\t\tNV4\t\t X \t\t32-63\t\t1\t\t\t\tN/A\n",
         [("0-31", "0", None), ("32-63", "1", None)]),
        # empty CPU affinity (restricted cpuset) next to a NUMA N/A
        ("GPU0\t X \tSYS\t\t\tN/A\t\tN/A\nGPU1\tSYS\t X \t\t\tN/A\t\tN/A\n",
         [(None, None, None), (None, None, None)]),
        # every separator doubled and an empty CPU affinity
        ("GPU0\t\t X \t\tSYS\t\t\t\t0\t\t\t\tN/A\nGPU1\t\tSYS\t\t X \t\t\t\t1\t\t\t\tN/A\n",
         [(None, "0", None), (None, "1", None)]),
    ],
    ids=["numa-na", "all-doubled", "empty-cpu-numa-na", "all-doubled-empty-cpu"],
)
def test_topo_doubled_tab_rows_parse(rows: str, affinity: list[tuple[str | None, ...]]) -> None:
    from clusterforge.parse import nvidia_smi_topo

    topo = nvidia_smi_topo.parse(TOPO_HEADER + rows)
    assert topo.gpus == ("GPU0", "GPU1") and topo.nics == ()
    assert topo.matrix["GPU0"]["GPU1"] == topo.matrix["GPU1"]["GPU0"] != ""
    got = [(a.cpu, a.numa, a.gpu_numa_id) for a in (topo.affinity["GPU0"], topo.affinity["GPU1"])]
    assert got == affinity


def test_topo_row_with_a_value_too_many_is_still_an_error() -> None:
    from clusterforge.parse import nvidia_smi_topo

    bad = TOPO_HEADER + "GPU0\t X \tPHB\t0-7\t\t0\t\t1\t\tN/A\nGPU1\tPHB\t X \t0-7\t0\t\tN/A\n"
    err = raises_at(nvidia_smi_topo.parse, bad, 2)
    assert "too many affinity values" in err.message


def test_topo_row_missing_a_matrix_cell_is_an_error() -> None:
    from clusterforge.parse import nvidia_smi_topo

    bad = TOPO_HEADER + "GPU0\t X \t\t0-7\t0\t\tN/A\nGPU1\tPHB\t X \t0-7\t0\t\tN/A\n"
    err = raises_at(nvidia_smi_topo.parse, bad, 2)
    assert "bad matrix cell '0-7'" in err.message


def _tab_topo_fixtures() -> list[Path]:
    from _parse_fixtures import FIXTURES, read_text

    return [p for p in sorted((FIXTURES / "nvidia-smi-topo").glob("*.txt")) if "\t" in read_text(p)]


@pytest.mark.parametrize("path", _tab_topo_fixtures(), ids=lambda p: p.stem)
@pytest.mark.parametrize("sep", ["\t\t", "\t\t\t"])
def test_every_real_tab_topo_parses_the_same_with_its_tabs_multiplied(path: Path, sep: str) -> None:
    from _parse_fixtures import actual, read_text

    from clusterforge.parse import nvidia_smi_topo

    expected = actual(path)
    assert "error" not in expected
    again = nvidia_smi_topo.parse(read_text(path).replace("\t", sep))
    assert to_jsonable("nvidia-smi-topo", again) == expected
