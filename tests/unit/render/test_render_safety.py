"""`render --output`: nothing written or deleted outside the output directory, symlinks in it refused,
one writer at a time (a lock), leftover temporaries of a killed run removed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cf_lab_inventory import LAB
from clusterforge.api import load_checked
from clusterforge.cli.main import app
from clusterforge.render import render
from clusterforge.render.writer import MANIFEST, UnsafeOutput, read_manifest, write_tree
from clusterforge.util.fsutil import (
    LOCK_FILE,
    LOCK_WAIT_ENV,
    LockTimeout,
    directory_lock,
    is_temporary,
    remove_temporaries,
    terminate_cleanly,
    write_atomic,
)


def test_a_symlinked_subdirectory_is_refused_and_nothing_escapes(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "hosts").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafeOutput, match="symlink"):
        write_tree(out, {"a.conf": "a\n", "hosts/gpu01/etc/nccl.conf": "x\n"})
    assert list(outside.iterdir()) == []
    assert not (out / "a.conf").exists()  # refused before anything was written


def test_a_symlinked_file_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.conf").symlink_to(victim)
    with pytest.raises(UnsafeOutput):
        write_tree(out, {"a.conf": "a\n"})
    assert victim.read_text() == "keep\n"


def test_a_planted_manifest_line_through_a_symlink_deletes_nothing_outside(tmp_path: Path) -> None:
    outside = tmp_path / "etc"
    outside.mkdir()
    (outside / "passwd").write_text("root:x:0:0\n")
    out = tmp_path / "out"
    write_tree(out, {"a.conf": "a\n"})
    (out / "sub").symlink_to(outside, target_is_directory=True)
    (out / MANIFEST).write_text("a.conf\nsub/passwd\n")
    with pytest.raises(UnsafeOutput, match="sub"):
        write_tree(out, {"a.conf": "a\n"})
    assert (outside / "passwd").read_text() == "root:x:0:0\n"


def test_a_planted_manifest_symlink_entry_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    out = tmp_path / "out"
    write_tree(out, {"a.conf": "a\n"})
    (out / "link").symlink_to(victim)
    (out / MANIFEST).write_text("a.conf\nlink\n")
    with pytest.raises(UnsafeOutput):
        write_tree(out, {"a.conf": "a\n"})
    assert victim.read_text() == "keep\n" and (out / "link").is_symlink()


@pytest.mark.parametrize("line", ["../victim", "/etc/hostname", "a/../../victim", "./a.conf", "a//b", "x\x1by"])
def test_bad_manifest_lines_are_reported_and_dropped(tmp_path: Path, line: str) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST).write_text(f"{line}\n")
    report = write_tree(out, {"x": "y\n"})
    assert report.ignored == [line] and report.removed == []
    assert victim.read_text() == "keep\n"
    assert read_manifest(out) == ["x"]


def test_a_symlinked_manifest_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "list"
    elsewhere.write_text("a\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST).symlink_to(elsewhere)
    with pytest.raises(UnsafeOutput):
        write_tree(out, {"x": "y\n"})


def test_the_output_directory_itself_may_be_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "out").symlink_to(real, target_is_directory=True)
    write_tree(tmp_path / "out", {"a/b.conf": "x\n"})
    assert (real / "a" / "b.conf").read_text() == "x\n"


def test_cli_refuses_a_symlink_in_the_output_with_a_clear_error(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "hosts").symlink_to(outside, target_is_directory=True)
    result = CliRunner().invoke(app, ["render", str(LAB), "--output", str(out), "--no-svg"])
    assert result.exit_code == 1
    assert "symlink inside the output directory" in result.output and "Traceback" not in result.output
    assert list(outside.iterdir()) == []


def test_leftover_temporaries_are_removed_on_the_next_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(out, {"a/b.conf": "x\n"})
    ours = [out / "a" / ".b.conf.k2j3h4g5.cf-tmp", out / "a" / ".b.conf.q9w8e7r6"]  # new and older naming
    theirs = [out / "a" / ".hidden", out / "a" / ".other.q9w8e7r6", out / "notes.txt"]
    for path in ours + theirs:
        path.write_text("junk\n")
    report = write_tree(out, {"a/b.conf": "x\n"})
    assert sorted(report.temporaries) == ["a/.b.conf.k2j3h4g5.cf-tmp", "a/.b.conf.q9w8e7r6"]
    assert not any(p.exists() for p in ours) and all(p.exists() for p in theirs)


def test_remove_temporaries_not_recursive_keeps_subdirectories(tmp_path: Path) -> None:
    top, below = tmp_path / ".a.k2j3h4g5.cf-tmp", tmp_path / "sub" / ".b.k2j3h4g5.cf-tmp"
    below.parent.mkdir()
    for path in (top, below):
        path.write_text("junk\n")
    assert remove_temporaries(tmp_path, recursive=False) == [top]
    assert not top.exists() and below.exists()
    assert remove_temporaries(tmp_path) == [below]


def test_temporary_names() -> None:
    assert is_temporary(".hosts.abcd1234.cf-tmp")
    assert is_temporary(".hosts.abcd1234", {"hosts"})
    assert not is_temporary(".hosts.abcd1234") and not is_temporary(".hosts.ab", {"hosts"})
    assert not is_temporary("hosts.abcd1234.cf-tmp")


def test_sigterm_during_a_write_leaves_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_fsync = os.fsync

    def fsync_then_term(fd: int) -> None:
        real_fsync(fd)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)  # the handler raises before this returns

    monkeypatch.setattr(os, "fsync", fsync_then_term)
    with pytest.raises(SystemExit), terminate_cleanly():
        write_atomic(tmp_path / "a.conf", "x\n")
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL or callable(signal.getsignal(signal.SIGTERM))


def test_a_held_lock_is_waited_for_then_refused(tmp_path: Path) -> None:
    told: list[str] = []
    with directory_lock(tmp_path / "out"):
        start = time.monotonic()
        with pytest.raises(LockTimeout, match="in use by another clusterforge run"):
            write_tree(tmp_path / "out", {"a": "b\n"}, on_wait=told.append)
        assert time.monotonic() - start >= 0.3
    assert len(told) == 1 and f"pid {os.getpid()}" in told[0]
    assert not (tmp_path / "out" / "a").exists()
    assert write_tree(tmp_path / "out", {"a": "b\n"}).written == ["a"]  # released


@pytest.fixture(autouse=True)
def _short_lock_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOCK_WAIT_ENV, "0.5")


def test_cli_plan_write_and_learn_are_refused_while_the_environment_is_locked(tmp_path: Path) -> None:
    env = tmp_path / "lab"
    shutil.copytree(LAB, env)
    (env / LOCK_FILE).unlink(missing_ok=True)
    sample = tmp_path / "ibnetdiscover.txt"
    sample.write_text("")
    with directory_lock(env):
        plan = CliRunner().invoke(app, ["plan", str(env), "--write"])
        learn = CliRunner().invoke(app, ["learn", str(env), "--from", str(sample)])
    for result in (plan, learn):
        assert result.exit_code == 1, result.output
        assert "refused" in result.output and "in use by another clusterforge run" in result.output
    assert {p.name for p in env.iterdir()} == {p.name for p in LAB.iterdir()} | {LOCK_FILE}  # nothing written


def _variant(tmp_path: Path) -> Path:
    """The lab without its last two compute nodes (and their cables): a different set of files."""
    env = tmp_path / "small"
    shutil.copytree(LAB, env)
    (env / LOCK_FILE).unlink(missing_ok=True)
    (env / "addresses.generated.yaml").unlink(missing_ok=True)  # frozen addresses of the removed nodes
    nodes = (env / "nodes.yaml").read_text().splitlines()
    gone = [line for line in nodes if "name: gpu08" in line or "name: gpu07" in line]
    assert len(gone) == 2
    (env / "nodes.yaml").write_text("\n".join(line for line in nodes if line not in gone) + "\n")
    fabric = (env / "fabric.yaml").read_text().splitlines()
    (env / "fabric.yaml").write_text("\n".join(
        line for line in fabric if "gpu07/" not in line and "gpu08/" not in line) + "\n")
    return env


def _tree(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): p.read_text() for p in out.rglob("*")
            if p.is_file() and p.name not in (MANIFEST, LOCK_FILE)}


def test_two_concurrent_renders_never_leave_a_mixed_tree(tmp_path: Path) -> None:
    small = _variant(tmp_path)
    expected = [render(load_checked(e).index, e.name, svg=False).files for e in (LAB, small)]
    assert set(expected[0]) != set(expected[1])
    out = tmp_path / "out"
    cf = str(Path(sys.executable).with_name("clusterforge"))
    env = dict(os.environ, **{LOCK_WAIT_ENV: "120"})
    procs = [subprocess.Popen([cf, "render", str(e), "--output", str(out), "--no-svg"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for e in (LAB, small)]
    results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    tree = _tree(out)
    assert tree in (dict(expected[0]), dict(expected[1]))  # one inventory's tree, whole
    assert read_manifest(out) == sorted(tree)  # every listed file exists, nothing unlisted is left


def test_plan_write_removes_a_killed_runs_temporaries_from_the_environment(tmp_path: Path) -> None:
    env = tmp_path / "lab"
    shutil.copytree(LAB, env)
    leftover = env / ".cabling.generated.yaml.k2j3h4g5.cf-tmp"
    leftover.write_text("half a file\n")
    mine = env / ".notes"
    mine.write_text("keep\n")
    nested = env / "sub" / ".x.yaml.k2j3h4g5.cf-tmp"  # the lock covers its directory, not below it
    nested.parent.mkdir()
    nested.write_text("not ours to judge\n")
    result = CliRunner().invoke(app, ["plan", str(env), "--write"])
    assert result.exit_code in (0, 4), result.output
    assert not leftover.exists() and mine.read_text() == "keep\n" and nested.exists()
    assert "removed leftover temporary" in result.output
