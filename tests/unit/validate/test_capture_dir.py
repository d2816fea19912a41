"""`validate --from DIR` reads only regular files inside DIR (issue #27, classes 6 and 7): a FIFO is refused,
not waited on; a symbolic link that leaves DIR is refused and never read (its lines are never quoted); an
oversized capture is named by its file. Each refusal: exit 2, the file named, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.cli.main import app
from clusterforge.collect.store import DEFAULT_MAX_MB, CaptureRefused, OutputTooLarge, load_dir

ROOT = Path(__file__).resolve().parents[3]
LAB = ROOT / "inventories" / "lab"
SECRET = "root:$6$saltsalt$SECRET-HASH-LINE:19000:0:99999:7:::"


def _capture(tmp_path: Path) -> Path:
    d = tmp_path / "cap"
    (d / "fabric").mkdir(parents=True)
    (d / "hosts" / "gpu01").mkdir(parents=True)
    (d / "fabric" / "ibnetdiscover.txt").write_text("#\n")
    return d


def _validate(cap: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["validate", str(LAB), "--from", str(cap)])
    return result.exit_code, result.output


def _load_within(d: Path, seconds: float = 20) -> BaseException | None:
    """load_dir's exception, or None; fails if it does not return within `seconds` (a blocked open)."""
    got: list[BaseException | None] = []

    def run() -> None:
        try:
            load_dir(d)
            got.append(None)
        except BaseException as exc:  # handed to the test
            got.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert got, f"load_dir did not return within {seconds} s"
    return got[0]


def test_a_fifo_in_the_capture_directory_is_refused_not_waited_on(tmp_path: Path) -> None:
    d = _capture(tmp_path)
    fifo = d / "hosts" / "gpu01" / "ibstat.txt"
    os.mkfifo(fifo)
    exc = _load_within(d)
    assert isinstance(exc, CaptureRefused) and exc.filename == str(fifo)
    assert "not a regular file" in str(exc)


@pytest.mark.parametrize("extra", [[], ["--fabric-only"]])  # the full command, and the declared-fabric fast path
def test_validate_cli_with_a_fifo_exits_2_naming_it(tmp_path: Path, extra: list[str]) -> None:
    d = _capture(tmp_path)
    os.mkfifo(d / "fabric" / "iblinkinfo.txt")
    proc = subprocess.run([str(Path(sys.executable).parent / "clusterforge"), "validate", str(LAB), "--from", str(d),
                           *extra],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert f"{d}/fabric/iblinkinfo.txt: " in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("where", ["fabric/ibnetdiscover.txt", "hosts/gpu01/ibstat.txt"])
def test_a_link_out_of_the_capture_directory_is_refused_and_never_quoted(tmp_path: Path, where: str) -> None:
    secret = tmp_path / "shadow"
    secret.write_text(SECRET + "\n")
    d = _capture(tmp_path)
    link = d / where
    link.unlink(missing_ok=True)
    link.symlink_to(secret)
    code, output = _validate(d)
    assert code == 2, output
    assert f"{link}: " in output and "leaves" in output
    assert "SECRET" not in output and "saltsalt" not in output


def test_a_linked_host_directory_out_of_the_capture_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "ibstat.txt").write_text(SECRET + "\n")
    d = _capture(tmp_path)
    (d / "hosts" / "gpu02").symlink_to(outside, target_is_directory=True)
    code, output = _validate(d)
    assert code == 2 and "SECRET" not in output
    assert f"{d}/hosts/gpu02: " in output


def test_a_link_that_stays_inside_is_read(tmp_path: Path) -> None:
    d = _capture(tmp_path)
    (d / "saved").mkdir()
    (d / "saved" / "ibstat.txt").write_text("hello\n")
    (d / "hosts" / "gpu01" / "ibstat.txt").symlink_to(Path("..") / ".." / "saved" / "ibstat.txt")
    obs = load_dir(d)
    assert obs.hosts["gpu01"]["ibstat"] == "hello\n"


def test_a_link_loop_is_refused(tmp_path: Path) -> None:
    d = _capture(tmp_path)
    loop = d / "hosts" / "gpu01" / "ibstat.txt"
    loop.symlink_to(loop)
    exc = _load_within(d)
    assert isinstance(exc, OSError) and exc.filename == str(loop)
    code, output = _validate(d)
    assert code == 2 and f"{loop}: " in output


def test_an_oversized_capture_is_named_by_its_file(tmp_path: Path) -> None:
    d = _capture(tmp_path)
    big = d / "hosts" / "gpu01" / "ibstat.txt"
    with big.open("wb") as fh:
        fh.truncate((DEFAULT_MAX_MB + 1) * 1024 * 1024)  # sparse
    exc = _load_within(d, 60)
    assert isinstance(exc, OutputTooLarge) and exc.filename == str(big)
    code, output = _validate(d)
    assert code == 2
    assert f"{big}: " in output and f"larger than {DEFAULT_MAX_MB} MB" in output
