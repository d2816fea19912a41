"""A saved tool output given by name (`learn ENV --from FILE`, `parse TOOL FILE`) is read only when it is a
regular file (issue #27, class 6): a FIFO blocked both forever, a device was read up to the cap. Each is
refused at once, exit 2, the file named, no traceback; `parse TOOL -` still reads stdin. Run as a process
with a timeout: a blocked open fails the test instead of hanging it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LAB = ROOT / "inventories" / "lab"
CF = str(Path(sys.executable).parent / "clusterforge")


def _run(args: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([CF, *args], capture_output=True, text=True, timeout=30, cwd=cwd, input=stdin)
    except subprocess.TimeoutExpired:
        pytest.fail(f"clusterforge {' '.join(args)} did not return within 30 s (blocked on its input)")


def _refused(proc: subprocess.CompletedProcess[str], path: Path, why: str = "not a regular file") -> None:
    assert proc.returncode == 2, proc.stderr
    assert f"{path}: {why}" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_parse_of_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "ibstat.txt"
    os.mkfifo(fifo)
    _refused(_run(["parse", "ibstat", str(fifo)], tmp_path), fifo)


def test_parse_of_a_device_or_directory_is_refused(tmp_path: Path) -> None:
    _refused(_run(["parse", "ibstat", "/dev/zero"], tmp_path), Path("/dev/zero"))
    _refused(_run(["parse", "ibstat", str(tmp_path)], tmp_path), tmp_path, "not a regular file")


def test_parse_still_reads_a_regular_file_and_stdin(tmp_path: Path) -> None:
    sample = ROOT / "tests" / "fixtures" / "ibstat" / "clusterforge-lab-umad2sim-2hca-hdr.txt"
    saved = tmp_path / "ibstat.txt"
    shutil.copyfile(sample, saved)
    from_file = _run(["parse", "ibstat", str(saved)], tmp_path)
    assert from_file.returncode == 0, from_file.stderr
    from_stdin = _run(["parse", "ibstat", "-"], tmp_path, stdin=sample.read_text())
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert from_stdin.stdout == from_file.stdout and "\"node_guid\"" in from_file.stdout


def test_learn_from_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    env = tmp_path / "lab"
    shutil.copytree(LAB, env)
    before = {p.name: p.read_bytes() for p in env.glob("*.yaml")}
    fifo = tmp_path / "ibnetdiscover.txt"
    os.mkfifo(fifo)
    _refused(_run(["learn", str(env), "--from", str(fifo)], tmp_path), fifo)
    assert {p.name: p.read_bytes() for p in env.glob("*.yaml")} == before  # nothing written
    _refused(_run(["learn", str(env), "--from", "/dev/zero", "--dry-run"], tmp_path), Path("/dev/zero"))
