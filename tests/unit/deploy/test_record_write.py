"""The deploy record's write (deploy/record.update_record) adds only the record to its directory and, cut short,
keeps the old one (#33): an interrupt as the new record is put in place (os.replace, the atomic write's last
step), a rename that fails, and a write that fails mid-way in a real process (a real file size limit) each leave
applied.json byte for byte as it was, the history without a line for the run, no temporary, and the directory
listing as it was."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cf_output_dirs import temporaries, tree
from clusterforge.api import load_checked
from clusterforge.deploy.api import DeployRequest, plans_for
from clusterforge.deploy.record import HISTORY_FILE, RECORD_FILE, read_record, update_record
from clusterforge.deploy.runner import HostResult
from clusterforge.util.fsutil import LOCK_FILE, TEMP_SUFFIX

ROOT = Path(__file__).resolve().parents[3]
LAB = ROOT / "inventories" / "lab"


@pytest.fixture(scope="module")
def plans() -> dict[str, Any]:
    return plans_for(LAB, DeployRequest(), None, load_checked(LAB).index, whole=True)


def _write(directory: Path, plans: dict[str, Any], status: str = "changed", engine: str = "pyinfra") -> None:
    update_record(directory, plans.values(), [HostResult(n, status) for n in plans], engine=engine, env=LAB,
                  targets={n: f"ssh:{p.address}" for n, p in plans.items()})


def test_a_record_write_adds_the_record_and_nothing_else(tmp_path: Path, plans: dict[str, Any]) -> None:
    where = tmp_path / "state" / "lab"
    where.mkdir(parents=True)
    (where / "notes.txt").write_text("the operator's\n")
    (tmp_path / "beside.txt").write_text("x\n")
    before = tree(tmp_path)
    _write(where, plans)
    after = tree(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before
    assert set(after) - set(before) == {f"state/lab/{n}" for n in (RECORD_FILE, HISTORY_FILE, LOCK_FILE)}
    assert temporaries(tmp_path) == [] and set(read_record(where, "lab")) == set(plans)


@pytest.fixture
def recorded(tmp_path: Path, plans: dict[str, Any]) -> tuple[Path, dict[str, str], bytes]:
    """A directory holding a record of the whole lab deployed: it, its tree, the record's bytes."""
    where = tmp_path / "state"
    where.mkdir()
    _write(where, plans)
    return where, tree(tmp_path), (where / RECORD_FILE).read_bytes()


def _kept(tmp_path: Path, where: Path, before: dict[str, str], old: bytes) -> None:
    assert (where / RECORD_FILE).read_bytes() == old
    assert tree(tmp_path) == before  # the listing (and the history) as it was: no line for the cut run
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize("raised", [KeyboardInterrupt, OSError(errno.EIO, "Input/output error")],
                         ids=["interrupt", "rename-fails"])
def test_a_replace_cut_short_keeps_the_old_record(raised: BaseException | type[BaseException], tmp_path: Path,
                                                   plans: dict[str, Any], recorded: tuple[Path, dict[str, str], bytes],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    where, before, old = recorded
    real = os.replace
    seen: list[str] = []

    def replace(src: str, dst: str) -> None:
        seen.append(os.fspath(dst))
        if Path(dst).name == RECORD_FILE:
            raise raised
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KeyboardInterrupt if raised is KeyboardInterrupt else OSError):
        _write(where, dict(list(plans.items())[:2]), engine="ansible")
    monkeypatch.undo()
    assert [Path(s).name for s in seen] == [RECORD_FILE]  # the record's own replace was the one cut
    _kept(tmp_path, where, before, old)
    assert set(read_record(where, "lab")) == set(plans)


WRITE = """
import resource, signal, sys
from pathlib import Path
from clusterforge.api import load_checked
from clusterforge.deploy.api import DeployRequest, plans_for
from clusterforge.deploy.record import update_record
from clusterforge.deploy.runner import HostResult
env, where, limit = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
plans = plans_for(env, DeployRequest(), None, load_checked(env).index, whole=True)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit a write fails (EFBIG) instead of killing
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    update_record(where, plans.values(), [HostResult(n, "changed") for n in plans], engine="ansible", env=env,
                  targets={n: f"ssh:{p.address}" for n, p in plans.items()})
except OSError as exc:
    print("OSError", exc.errno)
    sys.exit(3)
"""


def test_a_write_that_fails_mid_way_keeps_the_old_record(tmp_path: Path,
                                                         recorded: tuple[Path, dict[str, str], bytes]) -> None:
    """A real file size limit (RLIMIT_FSIZE binds root too) one byte short of the record, in a real process: the
    new record's bytes stop there, as on a disk that fills up."""
    where, before, old = recorded
    proc = subprocess.run([sys.executable, "-c", WRITE, str(LAB), str(where), str(len(old) - 1)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 3 and proc.stdout.strip() == f"OSError {errno.EFBIG}", proc.stdout + proc.stderr
    # the lock file's "pid N" line is the one byte-for-byte change the attempt may make
    lock = f"state/{LOCK_FILE}"
    assert {k: v for k, v in tree(tmp_path).items() if k != lock} == {k: v for k, v in before.items() if k != lock}
    assert (where / RECORD_FILE).read_bytes() == old and temporaries(tmp_path) == []
    assert json.loads(old)["hosts"] == read_record(where, "lab")


def test_a_killed_runs_temporary_goes_with_the_next_write(tmp_path: Path, plans: dict[str, Any],
                                                          recorded: tuple[Path, dict[str, str], bytes]) -> None:
    where, _before, _old = recorded
    left = where / f".{RECORD_FILE}.k1ll3d_x{TEMP_SUFFIX}"  # what write_atomic leaves when SIGKILL comes mid-write
    left.write_text('{"version": 3, "hos')
    _write(where, plans)
    assert not left.exists()
