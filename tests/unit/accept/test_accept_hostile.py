"""accept --from under hostile input (#33): whatever sits where a planned output belongs (binary, NUL, UTF-16,
100k-deep JSON, absurd numbers, a cut file, a FIFO, a symlink loop or one leaving the directory, a directory)
is an ACC-PARSE finding or a clean refusal (exit 2) naming the file, never a traceback, a hang or a pass."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cf_accept_runs import run_dir
from clusterforge.accept.judge import judge
from clusterforge.accept.plan import accept_plan
from clusterforge.api import load_checked
from clusterforge.cli.main import app

ROOT = Path(__file__).resolve().parents[3]
LAB = ROOT / "inventories" / "lab"

TEXTS: dict[str, bytes] = {
    "binary": bytes(range(256)) * 4,
    "nul": b"\x00" * 4096,
    "utf16": "| Deployment | Pass |\n".encode("utf-16"),
    "deep-json": b"[" * 100_000,
    "huge-number": ("#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong\n"
                    f"   8589934592  2147483648  float  sum  -1  1  {'9' * 5000}  {'9' * 5000}  0  1  1  1  0\n"
                    ).encode(),
    "empty": b"",
}


def _victims(run: Path) -> list[Path]:
    """One planned output of each kind: a node's, a link's, the fabric's."""
    return [run / "nodes" / "gpu01" / "dcgmi-diag", run / "nodes" / "gpu01" / "nvidia-smi-q",
            run / "nodes" / "gpu01" / "nvidia-smi-nvlink", run / "nodes" / "gpu01" / "nccl-single",
            next((run / "links").iterdir()), next((run / "nccl").iterdir())]


@pytest.mark.parametrize("kind", sorted(TEXTS))
def test_garbage_in_every_planned_output_is_acc_parse_never_a_pass(kind: str, tmp_path: Path) -> None:
    index = load_checked(LAB).index
    plan = accept_plan(index)
    run = run_dir(tmp_path, plan)
    victims = _victims(run)
    for v in victims:
        v.write_bytes(TEXTS[kind])
    judged = judge(index, run, plan)
    errors = [f for f in judged.findings if f.severity == "error"]
    for v in victims:
        rel = str(v.relative_to(run))
        link = plan.links[0]
        about = {"dcgmi-diag": "gpu01", "nvidia-smi-q": "gpu01", "nvidia-smi-nvlink": "gpu01",
                 "nccl-single": "gpu01"}.get(v.name) or (f"{link.client.label} -> " if rel.startswith("links/")
                                                         else f"nccl {v.name}")
        # read as garbage (ACC-PARSE naming the file), or as a failed test of that part: never as a pass
        assert any(f.message.startswith(rel + ":") or f.subject.startswith(about) for f in errors), \
            (kind, rel, [(f.rule, f.subject, f.message[:80]) for f in judged.findings])
    parse_errors = sum(1 for f in errors if f.rule == "ACC-PARSE")
    assert judged.tests_run <= judged.tests_planned - parse_errors  # an output that did not parse is no run


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _loop(p: Path) -> None:
    p.symlink_to(p)


def _outside(p: Path) -> None:
    (p.parent.parent.parent / "secret.txt").write_text("root:x:0:0\n")
    p.symlink_to(Path("/etc/passwd"))


def _directory(p: Path) -> None:
    p.mkdir()


@pytest.mark.parametrize("make", [_fifo, _loop, _outside, _directory], ids=["fifo", "loop", "outside", "dir"])
@pytest.mark.parametrize("which", range(6))
def test_a_capture_that_is_no_file_is_refused_cleanly(make: Callable[[Path], None], which: int,
                                                      tmp_path: Path) -> None:
    index = load_checked(LAB).index
    plan = accept_plan(index)
    run = run_dir(tmp_path, plan)
    victim = _victims(run)[which]
    victim.unlink()
    make(victim)
    result = CliRunner().invoke(app, ["accept", str(LAB), "--from", str(run)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.output.startswith(f"accept: {victim}: "), result.output
    assert "Errno" not in result.output and "root:x" not in result.output
    assert len(result.output.splitlines()) == 1


def test_a_run_dir_that_is_a_file_or_missing(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    for where in (tmp_path / "f", tmp_path / "missing"):
        result = CliRunner().invoke(app, ["accept", str(LAB), "--from", str(where)])
        assert result.exit_code == 2 and "Traceback" not in result.output
    shutil.rmtree(tmp_path)
