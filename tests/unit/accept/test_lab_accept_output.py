"""`lab accept --output DIR` writes only under DIR and leaves no temporary (#33), tested without a lab: the
writing part (cli/lab/accept.write_outputs) given the stand-in outputs for rates as `lab accept` reads them from
ibnetdiscover, and the command's refusal of a hostile DIR, which comes before it looks for a lab. A write that
fails mid-way (a real file size limit, in a real process) or an interrupt at a file's replace leaves DIR as it
found it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cf_output_dirs import HOSTILE, temporaries, tree
from clusterforge.accept.plan import accept_plan
from clusterforge.api import load_checked
from clusterforge.cli.lab.accept import write_outputs
from clusterforge.cli.main import app
from clusterforge.lab.accept_standins import AcceptFaults, outputs

ROOT = Path(__file__).resolve().parents[3]
LAB = ROOT / "inventories" / "lab"


def _texts() -> dict[str, str]:
    plan = accept_plan(load_checked(LAB).index)
    return outputs(plan, {p.label: 200.0 for p in plan.ports}, AcceptFaults())


@pytest.mark.parametrize("existing", [False, True], ids=["new", "empty"])
def test_the_outputs_and_only_they_are_written_under_dir(existing: bool, tmp_path: Path) -> None:
    texts = _texts()
    out = tmp_path / "work" / "out"
    if existing:
        out.mkdir(parents=True)
    (tmp_path / "beside.txt").write_text("mine\n")
    before = tree(tmp_path)
    write_outputs(out, texts)
    files = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    assert files == {*texts, "STAND-IN.txt"}
    assert all((out / rel).read_text() == text for rel, text in texts.items())
    after = tree(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before  # nothing changed beside DIR
    assert all(k.startswith("work/out/") or k in ("work", "work/out") for k in set(after) - set(before))
    assert temporaries(tmp_path) == []


def test_an_interrupt_at_a_replace_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C as the fifth file is put in place (os.replace, the atomic write's last step): the four before it
    and the fifth's temporary go, and the directory the run created."""
    texts = _texts()
    out = tmp_path / "out"
    before = tree(tmp_path)
    real = os.replace
    calls: list[str] = []

    def replace(src: str, dst: str) -> None:
        calls.append(dst)
        if len(calls) == 5:
            raise KeyboardInterrupt
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        write_outputs(out, texts)
    monkeypatch.undo()
    assert len(calls) == 5 and tree(tmp_path) == before and temporaries(tmp_path) == []
    write_outputs(out, texts)  # the same again: the whole of it
    assert {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} == {*texts, "STAND-IN.txt"}


WRITE = """
import resource, signal, sys
from pathlib import Path
from clusterforge.accept.plan import accept_plan
from clusterforge.api import load_checked
from clusterforge.cli.lab.accept import write_outputs
from clusterforge.lab.accept_standins import AcceptFaults, outputs
plan = accept_plan(load_checked(Path(sys.argv[1])).index)
texts = outputs(plan, {p.label: 200.0 for p in plan.ports}, AcceptFaults())
largest = max(len(t.encode()) for t in texts.values())
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit a write fails (EFBIG) instead of killing
resource.setrlimit(resource.RLIMIT_FSIZE, (largest - 1, largest - 1))
try:
    write_outputs(Path(sys.argv[2]), texts)
except OSError as exc:
    print("OSError", exc.errno)
    sys.exit(3)
"""


@pytest.mark.parametrize("existing", [False, True], ids=["new", "empty"])
def test_a_write_that_fails_mid_way_leaves_dir_as_it_was(existing: bool, tmp_path: Path) -> None:
    """A real file size limit (RLIMIT_FSIZE binds root too) that the largest output passes, as a disk filling up."""
    out = tmp_path / "work" / "out"
    if existing:
        out.mkdir(parents=True)
    before = tree(tmp_path)
    proc = subprocess.run([sys.executable, "-c", WRITE, str(LAB), str(out)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 3 and proc.stdout.strip() == "OSError 27", proc.stdout + proc.stderr  # EFBIG
    assert tree(tmp_path) == before and temporaries(tmp_path) == []


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_lab_accept_refuses_a_hostile_output_dir_before_anything(kind: str, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTERFORGE_LAB_ROOT", str(tmp_path / "labroot"))  # no lab: the refusal comes first
    make, says = HOSTILE[kind]
    (tmp_path / "work").mkdir()
    target = tmp_path / "work" / "out"
    make(target)
    before = tree(tmp_path)
    result = CliRunner().invoke(app, ["lab", "accept", str(LAB), "--output", str(target)])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 1, result.output
    assert result.output.startswith(f"lab: --output {target}: ") and says in result.output, result.output
    assert len(result.output.splitlines()) == 1 and "Traceback" not in result.output
    assert tree(tmp_path) == before


def test_without_a_lab_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTERFORGE_LAB_ROOT", str(tmp_path / "labroot"))
    target = tmp_path / "out"
    result = CliRunner().invoke(app, ["lab", "accept", str(LAB), "--output", str(target)])
    assert result.exit_code == 1 and "no lab is up" in result.output, result.output
    assert not os.path.lexists(target) and not (tmp_path / "labroot").exists()


def test_sigterm_mid_write_leaves_nothing(tmp_path: Path) -> None:
    """A real SIGTERM, which the writing process sends itself as its third file's bytes reach the disk (after the
    fsync, before the rename): terminate_cleanly makes it SystemExit(143), and that file's temporary, the two
    before it and the directory go."""
    out = tmp_path / "out"
    script = WRITE.replace("signal.signal(signal.SIGXFSZ, signal.SIG_IGN)", "").replace(
        "resource.setrlimit(resource.RLIMIT_FSIZE, (largest - 1, largest - 1))",
        "import os\nimport clusterforge.util.fsutil as f\nn = [0]\nreal = os.fsync\n"
        "def fsync(fd):\n    n[0] += 1\n    real(fd)\n    if n[0] == 3:\n        os.kill(os.getpid(), signal.SIGTERM)\n"
        "os.fsync = fsync")
    before = tree(tmp_path)
    proc = subprocess.run([sys.executable, "-c", script, str(LAB), str(out)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 128 + signal.SIGTERM, proc.stdout + proc.stderr
    assert tree(tmp_path) == before and temporaries(tmp_path) == []
