"""`accept ENV --run DIR` given a hostile DIR, and interrupted (#33). DIR must be new or an empty directory given
as itself: a regular file, a FIFO, a symbolic link (a loop, to `/`, to another directory, dangling), a directory
holding an earlier run's outputs or a stray file, a path under a file, a place that cannot be written are each
one message naming DIR (exit 2), no traceback, and nothing written anywhere. A run interrupted (Ctrl-C or SIGTERM
to its process group, a real process and a real signal) or whose write fails (a real file size limit) starts no
further test, leaves no output and no temporary (DIR as it found it), and the same command run again gives what an
uninterrupted run gives.

The remote side is a stand-in `ssh` on PATH (a shell script, run as a real subprocess) that answers the plan's
commands with the real captures tests/cf_accept_runs.py uses (a link's figures CONSTRUCTED there); the
environment's lab is never up (CLUSTERFORGE_LAB_ROOT is empty), so the command reaches "the real hosts"
through it."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from cf_accept_runs import DCGM_PASS, FIX, nccl, perftest, run_dir
from cf_output_dirs import HOSTILE as BASE_HOSTILE
from cf_output_dirs import temporaries, tree
from clusterforge.accept.plan import accept_plan
from clusterforge.api import load_checked
from clusterforge.cli.main import app

ROOT = Path(__file__).resolve().parents[3]
LAB = ROOT / "inventories" / "lab"
CLI = Path(sys.executable).parent / "clusterforge"

FAKE_SSH = r"""#!/bin/sh
# tests' stand-in for OpenSSH: the remote command is the last argument (SshConfig.argv)
for last; do :; done
case "$last" in *@*) exit 255;; esac   # ControlMaster's `-O exit user@host`: no master here
printf '%s\n' "$*" >> "$CF_FAKE_SSH/log"
if [ -n "$CF_FAKE_SSH_STOP" ]; then
  case "$*" in $CF_FAKE_SSH_STOP) : > "$CF_FAKE_SSH/reached"; exec sleep 60;; esac
fi
a="$CF_FAKE_SSH/answers"
case "$last" in
  "dcgmi diag"*) exec cat "$a/dcgmi-diag";;
  "nvidia-smi -q") exec cat "$a/nvidia-smi-q";;
  "nvidia-smi nvlink --status") exec cat "$a/nvidia-smi-nvlink";;
  all_reduce_perf*) exec cat "$a/nccl-single";;
  "timeout "*) echo ' * Waiting for client to connect... *'; exit 0;;
  ib_write_bw*) exec cat "$a/link";;
  mpirun*) exec cat "$a/fabric";;
esac
exit 127
"""


def _fake_ssh(ctl: Path) -> dict[str, str]:
    """The stand-in ssh under ctl/bin and its answers under ctl/answers: the environment that puts it first on
    PATH (with an empty lab root and a temporary directory of its own, ctl/tmp)."""
    (ctl / "bin").mkdir(parents=True)
    (ctl / "bin" / "ssh").write_text(FAKE_SSH)
    (ctl / "bin" / "ssh").chmod(0o755)
    a = ctl / "answers"
    a.mkdir()
    shutil.copy(FIX / "dcgmi-diag" / DCGM_PASS, a / "dcgmi-diag")
    shutil.copy(FIX / "nvidia-smi-q" / "gpud-8xh100-535.161.08.txt", a / "nvidia-smi-q")
    shutil.copy(FIX / "nvidia-smi-nvlink-status" / "gpud-8xa100-sxm4-80gb.txt", a / "nvidia-smi-nvlink")
    (a / "nccl-single").write_text(nccl("gcm-1node-8xa100-80gb-allreduce-hostname-templated.txt"))
    (a / "link").write_text(perftest(196.6))
    (a / "fabric").write_text(nccl("gcm-2node-16xa100-80gb-allreduce-hostname-templated.txt"))
    for d in ("labroot", "tmp"):
        (ctl / d).mkdir()
    return {"PATH": f"{ctl / 'bin'}{os.pathsep}{os.environ['PATH']}", "CF_FAKE_SSH": str(ctl),
            "CLUSTERFORGE_LAB_ROOT": str(ctl / "labroot"), "TMPDIR": str(ctl / "tmp")}


def _one_at_a_time(tmp: Path) -> Path:
    """The lab inventory with `deploy.parallel: 1`: one node, one link test at a time (a queue behind the one
    running, which an interrupt must not go on to run)."""
    env = tmp / "env-lab"
    shutil.copytree(LAB, env)
    services = env / "services.yaml"
    doc = yaml.safe_load(services.read_text())
    doc["deploy"]["parallel"] = 1
    services.write_text(yaml.safe_dump(doc, sort_keys=False))
    return env


def _expected_layout(tmp: Path) -> dict[str, str]:
    """What a clean run saves: the layout tests/cf_accept_runs.py builds from the same captures, by digest."""
    index = load_checked(LAB).index
    return tree(run_dir(tmp, accept_plan(index)))


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in ssh for in-process runs (CliRunner): its control directory, tmp_path/ctl."""
    ctl = tmp_path / "ctl"
    for k, v in _fake_ssh(ctl).items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(tempfile, "tempdir", str(ctl / "tmp"))
    return ctl


def _earlier_run(p: Path) -> None:
    built = run_dir(p.parent / "earlier", accept_plan(load_checked(LAB).index))
    built.rename(p)


HOSTILE = {**BASE_HOSTILE, "an-earlier-run": (_earlier_run, "is not empty")}


def _one_message(result: object, code: int, starts: str) -> str:
    exit_code, output, exc = result.exit_code, result.output, result.exception  # type: ignore[attr-defined]
    assert exc is None or isinstance(exc, SystemExit), repr(exc)
    assert exit_code == code, output
    assert output.startswith(starts), output
    assert len(output.splitlines()) == 1, output
    assert "Traceback" not in output and "Errno" not in output
    return str(output)


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_run_dir_is_one_message_and_nothing_is_written(kind: str, tmp_path: Path, fake: Path) -> None:
    make, says = HOSTILE[kind]
    where = tmp_path / "work"
    where.mkdir()
    target = where / "run"
    make(target)
    before = tree(tmp_path)
    result = CliRunner().invoke(app, ["accept", str(LAB), "--run", str(target)])
    output = _one_message(result, 2, f"accept: --run {target}: ")
    assert says in output, output
    assert tree(tmp_path) == before  # nothing written, here or where a link leads (the other directory: empty)
    assert not (fake / "log").exists()  # no test was run


def test_a_run_dir_under_a_file_is_refused(tmp_path: Path, fake: Path) -> None:
    (tmp_path / "f").write_text("x\n")
    target = tmp_path / "f" / "run"
    before = tree(tmp_path)
    result = CliRunner().invoke(app, ["accept", str(LAB), "--run", str(target)])
    output = _one_message(result, 2, f"accept: --run {target}: ")
    assert f"{tmp_path / 'f'} is not a directory" in output
    assert tree(tmp_path) == before and not (fake / "log").exists()


def test_a_run_dir_that_cannot_be_created_even_by_root(tmp_path: Path, fake: Path) -> None:
    """procfs takes no directory of ours, root's or not: the run is refused before any test, and nothing kept."""
    target = Path(f"/proc/cf-accept-test-{os.getpid()}") / "run"
    result = CliRunner().invoke(app, ["accept", str(LAB), "--run", str(target)])
    output = _one_message(result, 2, f"accept: --run {target}: cannot write there (")
    assert "nothing kept" in output
    assert not (fake / "log").exists() and not os.path.lexists(target.parent)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a mode 0555 directory; the procfs and file-size "
                                                "limit cases cover an unwritable DIR as root")
def test_an_empty_dir_without_write_permission(tmp_path: Path, fake: Path) -> None:
    target = tmp_path / "run"
    target.mkdir(mode=0o555)
    try:
        result = CliRunner().invoke(app, ["accept", str(LAB), "--run", str(target)])
        _one_message(result, 2, f"accept: --run {target}: cannot write there (")
        assert list(target.iterdir()) == [] and not (fake / "log").exists()
    finally:
        target.chmod(0o755)


@pytest.mark.parametrize("existing", [False, True], ids=["new", "empty"])
def test_a_clean_run_writes_only_its_outputs_under_dir(existing: bool, tmp_path: Path, fake: Path) -> None:
    target = tmp_path / "work" / "run"
    if existing:
        target.mkdir(parents=True)
    before = tree(tmp_path, skip=fake)
    result = CliRunner().invoke(app, ["accept", str(LAB), "--run", str(target)])
    assert result.exit_code == 0, result.output
    assert "accept: passed:" in result.output and "Traceback" not in result.output
    saved = tree(target)
    assert saved == _expected_layout(fake / "expected")
    after = tree(tmp_path, skip=fake)
    added = {k for k in after if k not in before}
    inside = str(target.relative_to(tmp_path))
    assert all(k == inside or k.startswith(inside + "/") or (not existing and k == "work") for k in added), added
    assert {k: v for k, v in after.items() if k in before} == before  # nothing else changed
    assert temporaries(tmp_path) == [] and list((fake / "tmp").iterdir()) == []


def _spawn(env_dir: Path, target: Path, env: dict[str, str], preexec: Callable[[], None] | None = None
           ) -> subprocess.Popen[str]:
    return subprocess.Popen([str(CLI), "accept", str(env_dir), "--run", str(target)], env={**os.environ, **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=preexec)


def _stop_pattern(where: str) -> str:
    """A glob over the stand-in ssh's arguments: the command the interrupt comes during."""
    index = load_checked(LAB).index
    plan = accept_plan(index)
    addr = {n: index.addresses.text(ip) for n, ip in index.addresses.mgmt.items()}
    if where == "nodes":  # the third node's first test: two nodes' outputs collected, none saved yet
        return f"*@{addr[plan.nodes[2].node]} -- dcgmi diag*"
    if where == "links":  # a round-2 test's client: every node's outputs and round 1's links saved
        t = next(t for t in plan.links if t.round == 2)
        return f"*@{addr[t.client.node]} -- ib_write_bw * {addr[t.server.node]}"
    return "* -- mpirun *"  # the first fabric test: everything else saved


@pytest.mark.parametrize(("where", "sig", "existing"), [
    ("nodes", signal.SIGINT, False), ("links", signal.SIGINT, True), ("fabric", signal.SIGINT, False),
    ("links", signal.SIGTERM, False),
], ids=["nodes-ctrl-c-new", "links-ctrl-c-empty", "fabric-ctrl-c-new", "links-sigterm-new"])
def test_an_interrupted_run_leaves_nothing_and_a_rerun_converges(where: str, sig: signal.Signals, existing: bool,
                                                                 tmp_path: Path) -> None:
    ctl = tmp_path / "ctl"
    env = _fake_ssh(ctl)
    env_dir = _one_at_a_time(tmp_path)
    target = tmp_path / "work" / "run"
    if existing:
        target.mkdir(parents=True)
    before = tree(tmp_path, skip=ctl)
    proc = _spawn(env_dir, target, {**env, "CF_FAKE_SSH_STOP": _stop_pattern(where)})
    try:
        deadline = time.monotonic() + 90
        while not (ctl / "reached").exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run never reached the command to interrupt"
            time.sleep(0.05)
        if where != "nodes":
            assert target.is_dir() and any(target.rglob("*")), "outputs were saved before the interrupt"
        started = (ctl / "log").read_text().splitlines()
        os.killpg(proc.pid, sig)  # as a terminal's Ctrl-C, or a supervisor's stop, reaches the whole group
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == (130 if sig == signal.SIGINT else 128 + sig), err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("accept: ") and f"nothing kept in {target}" in last, err
    assert (ctl / "log").read_text().splitlines() == started  # no test was started after the interrupt
    assert tree(tmp_path, skip=ctl) == before  # DIR as it was (gone again, or empty), nothing else changed
    assert temporaries(tmp_path) == [] and list((ctl / "tmp").iterdir()) == []
    # the same command again, uninterrupted: what a first run gives
    again = subprocess.run([str(CLI), "accept", str(env_dir), "--run", str(target)], env={**os.environ, **env},
                           capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode == 0, again.stderr + again.stdout
    assert tree(target) == _expected_layout(ctl / "expected")
    assert temporaries(tmp_path) == []


def _file_size_limit(limit: int) -> Callable[[], None]:
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_write_that_fails_mid_run_leaves_nothing_and_names_the_file(tmp_path: Path) -> None:
    """A real file size limit (RLIMIT_FSIZE binds root too): the first node's dcgmi-diag output fits, its
    nvidia-smi -q (the largest) does not, as on a disk that fills up mid-run."""
    ctl = tmp_path / "ctl"
    env = _fake_ssh(ctl)
    small, large = ((ctl / "answers" / n).stat().st_size for n in ("dcgmi-diag", "nvidia-smi-q"))
    assert small < large
    target = tmp_path / "work" / "run"
    before = tree(tmp_path, skip=ctl)
    proc = _spawn(LAB, target, env, _file_size_limit(large - 1))
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"accept: --run {target}: cannot write there (File too large: {target}/nodes/"), err
    assert last.endswith("nvidia-smi-q); nothing kept"), err
    assert tree(tmp_path, skip=ctl) == before and temporaries(tmp_path) == []
