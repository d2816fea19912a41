"""CLI timings beside the tools they are compared with, measured in the same run; ibnetdiscover under ibsim.

    from cli_bench import cli_rows, ibnetdiscover_s
    rows = cli_rows(prod_dir)     # --help, check prod, validate --from vs ibnetdiscover, pyinfra, ansible

Every timed command is checked: exit status and an expected piece of its output (a run that failed is an
error, never a figure). Times are wall-clock, best of `RUNS`, each a fresh process (interpreter start-up
included: what a user waits for). ibnetdiscover runs against ibsim serving the same fabric, under the
lab lock (/tmp/cf-lab.lock) as every ibsim user does.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin"
RUNS = 5
LAB_LOCK = Path("/tmp/cf-lab.lock")


class BenchFailed(RuntimeError):
    """A timed run did not do what it was timed for."""


def timed(argv: list[str], expect: Callable[[subprocess.CompletedProcess[str]], str | None], runs: int = RUNS,
          cwd: Path = ROOT, env: dict[str, str] | None = None) -> float:
    """Best wall-clock seconds of `runs` runs of argv; `expect` returns why a run is wrong, or None."""
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600, check=False, env=env)
        seconds = time.perf_counter() - t0
        problem = expect(proc)
        if problem:
            raise BenchFailed(f"{' '.join(argv)}: {problem} (exit {proc.returncode}; stderr: {proc.stderr[-500:]})")
        best = min(best, seconds)
    return best


def exits(code: int, text: str) -> Callable[[subprocess.CompletedProcess[str]], str | None]:
    def check(proc: subprocess.CompletedProcess[str]) -> str | None:
        if proc.returncode != code:
            return f"exit {proc.returncode}, expected {code}"
        if text not in proc.stdout:
            return f"{text!r} not in its output"
        return None
    return check


@contextlib.contextmanager
def lab_lock() -> Iterator[None]:
    with LAB_LOCK.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def ibnetdiscover_s(netfile: Path, runs: int = 3) -> tuple[float, str]:
    """Best wall-clock seconds of `ibnetdiscover` (the command, process start included) against ibsim serving
    `netfile`, and its output. Raises BenchFailed when it fails or discovers no switch."""
    from clusterforge.lab.fabric_tools import FabricClient, ibnetdiscover
    from clusterforge.lab.ibsim import LocalEndpoint, start_ibsim, stop_ibsim

    with lab_lock(), tempfile.TemporaryDirectory(prefix="cf-clibench-") as tmp_s:
        tmp = Path(tmp_s)
        sim = start_ibsim(netfile, tmp / "ibsim", LocalEndpoint(f"cf-clibench-{os.getpid()}"), timeout=600)
        try:
            client = FabricClient(sim.endpoint, _first_ca(netfile), tmp / "scratch")
            best, text = float("inf"), ""
            for _ in range(runs):
                t0 = time.perf_counter()
                text = ibnetdiscover(client, timeout=600)
                best = min(best, time.perf_counter() - t0)
        finally:
            stop_ibsim(sim)
    if "\nSwitch" not in text and not text.startswith("Switch"):
        raise BenchFailed(f"ibnetdiscover on {netfile} found no switch")
    return best, text


def _first_ca(netfile: Path) -> str:
    """The simulated HCA the tool attaches as (ibsim's `Hca ... "name"` line): any host port of the fabric."""
    for line in netfile.read_text().splitlines():
        if line.startswith("Hca"):
            return line.split('"')[1]
    raise BenchFailed(f"{netfile}: no Hca in the net file")


def _seconds(value: float) -> float:
    return round(value, 3)


def cli_rows(prod: Path = ROOT / "inventories" / "prod") -> list[dict[str, object]]:
    """clusterforge's commands beside pyinfra and Ansible; `validate --from` beside ibnetdiscover (prod)."""
    return command_rows(prod) + validate_rows(prod)


def command_rows(prod: Path = ROOT / "inventories" / "prod") -> list[dict[str, object]]:
    cf = str(BIN / "clusterforge")
    rows: list[dict[str, object]] = []
    help_s = timed([cf, "--help"], exits(0, "Usage: clusterforge"))
    version_s = timed([cf, "--version"], exits(0, "clusterforge "))
    pyinfra_s = timed([str(BIN / "pyinfra"), "--help"], exits(0, "Usage: pyinfra"))
    ansible_s = timed([str(BIN / "ansible-playbook"), "--version"], exits(0, "ansible-playbook"))
    check_s = timed([cf, "check", str(prod), "--format", "json"], exits(0, '"ok": true'))
    python_s = timed([str(BIN / "python"), "-c", "pass"], exits(0, ""))
    rows += [
        {"bench": "cli", "command": "clusterforge --help", "seconds": _seconds(help_s),
         "vs pyinfra --help": round(help_s / pyinfra_s, 2),
         "vs ansible-playbook --version": round(help_s / ansible_s, 2), "goal": "< 0.3 s"},
        {"bench": "cli", "command": "clusterforge --version", "seconds": _seconds(version_s)},
        {"bench": "cli", "command": "clusterforge check prod", "seconds": _seconds(check_s),
         "vs pyinfra --help": round(check_s / pyinfra_s, 2), "goal": "< 1 s"},
        {"bench": "cli", "command": "pyinfra --help", "seconds": _seconds(pyinfra_s)},
        {"bench": "cli", "command": "ansible-playbook --version", "seconds": _seconds(ansible_s)},
        {"bench": "cli", "command": "python -c pass", "seconds": _seconds(python_s)},
    ]
    return rows


def validate_rows(prod: Path = ROOT / "inventories" / "prod",
                  sizes: tuple[int, ...] = (1024, 2048)) -> list[dict[str, object]]:
    """`validate ENV --from DIR --fabric-only` as a fresh process, without the declared-fabric cache (the full
    command: load, check, plan, parse, diff) and with it (validate/quick.py), beside ibnetdiscover under ibsim
    on the same fabric (prod), all in this run. The generated 1,024- and 2,048-node fabrics are past what
    ibsim simulates (13,312 ports): their ibnetdiscover text is clusterforge's simulator's, and no
    ibnetdiscover time is printed for them."""
    if shutil.which("ibsim") is None or shutil.which("ibnetdiscover") is None:
        raise BenchFailed("ibsim / ibnetdiscover are not installed (sh scripts/lab-deps.sh): the validate --from "
                          "figure is measured beside ibnetdiscover")
    from clusterforge.api import load_checked
    from clusterforge.render import render_environment

    index = load_checked(prod).index
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="cf-clibench-") as tmp_s:
        work = Path(tmp_s)
        netfile = work / "ibsim.net"
        netfile.write_text(render_environment(index, prod.name)["fabric/ibsim.net"])
        disc_s, text = ibnetdiscover_s(netfile)
        full_s, cached_s = _validate_both(prod, text, work / "prod")
        first_s = _first_after_render(prod, work / "prod" / "saved", work / "fresh")
        rows += [
            {"bench": "cli", "command": "clusterforge validate prod --from DIR --fabric-only (no cache: before)",
             "seconds": _seconds(full_s), "vs ibnetdiscover": round(full_s / disc_s, 2)},
            {"bench": "cli", "command": "clusterforge validate prod --from DIR --fabric-only (declared-fabric cache)",
             "seconds": _seconds(cached_s), "vs ibnetdiscover": round(cached_s / disc_s, 2),
             "vs no cache": round(cached_s / full_s, 2), "goal": "<= 1.0 x ibnetdiscover"},
            {"bench": "cli", "command": "clusterforge validate prod --from DIR --fabric-only (first run after render, "
             "fresh state)", "seconds": _seconds(first_s), "vs ibnetdiscover": round(first_s / disc_s, 2),
             "goal": "<= 1.0 x ibnetdiscover"},
            {"bench": "cli", "command": f"ibnetdiscover (ibsim, prod: {len(index.host_ports)} HCA ports)",
             "seconds": _seconds(disc_s)},
        ]
        for n in sizes:
            env = _generated_env(work / f"bench-{n}", n)
            gindex = load_checked(env).index
            from clusterforge.sim.ibnetdiscover import from_index, render

            full_s, cached_s = _validate_both(env, render(gindex, from_index(gindex)), work / f"v-{n}", runs=3)
            rows.append({"bench": "cli", "command": f"clusterforge validate bench-{n} --from DIR --fabric-only "
                         f"({len(gindex.host_ports)} HCA ports; simulated text)",
                         "seconds": _seconds(cached_s), "no cache (before)": _seconds(full_s),
                         "vs no cache": round(cached_s / full_s, 2), "vs ibnetdiscover": "ibsim: > 13,312 ports"})
    return rows


def _generated_env(env: Path, nodes: int) -> Path:
    from gen_inventory import bench_spec, generate

    env.mkdir(parents=True)
    for name, text in generate(bench_spec(nodes)).items():
        (env / name).write_text(text, encoding="utf-8")
    return env


def _validate_both(env: Path, text: str, work: Path, runs: int = RUNS) -> tuple[float, float]:
    """Best seconds of `validate env --from DIR --fabric-only --format json` without the cache, then with it
    (a first full run writes it; checked current and usable before it is timed). Each run must be clean."""
    from clusterforge.validate import quick

    saved = work / "saved"
    (saved / "fabric").mkdir(parents=True)
    (saved / "fabric" / "ibnetdiscover.txt").write_text(text)
    argv = [str(BIN / "clusterforge"), "validate", str(env), "--from", str(saved), "--fabric-only", "--format", "json"]
    state = work / "state"
    base = {**os.environ, quick.STATE_DIR_ENV: str(state)}
    full_s = timed(argv, _clean_validation, runs=runs, env={**base, quick.NO_CACHE_ENV: "1"})
    if (state / env.name).exists():
        raise BenchFailed(f"{quick.NO_CACHE_ENV}=1 wrote a cache under {state}")
    path = state / env.resolve().name / quick.CACHE_FILE
    for _ in range(3):  # a source file edited meanwhile (a shared checkout) changes the key: warm up again
        timed(argv, _clean_validation, runs=1, env=base)  # the full run that writes the cache
        if not _cache_current(path, env):
            continue
        cached_s = timed(argv, _clean_validation, runs=runs, env=base)
        if _cache_current(path, env):  # still current after timing: every timed run could use it
            return full_s, cached_s
    raise BenchFailed(f"{env}: no usable declared-fabric cache at {path} after a full run")


def _first_after_render(env: Path, saved: Path, work: Path, runs: int = RUNS) -> float:
    """What a fresh checkout meets (issue 21.6): an empty state directory, `render` (which loads and checks the
    inventory anyway and leaves the declared-fabric cache), then the first validate, timed. Best of `runs`,
    each from an empty state directory."""
    from clusterforge.validate import quick

    argv = [str(BIN / "clusterforge"), "validate", str(env), "--from", str(saved), "--fabric-only", "--format", "json"]
    best = float("inf")
    for i in range(runs):
        state = work / f"state-{i}"
        base = {**os.environ, quick.STATE_DIR_ENV: str(state)}
        subprocess.run([str(BIN / "clusterforge"), "render", str(env), "--output", str(work / f"out-{i}"), "--no-svg"],
                       capture_output=True, text=True, timeout=600, check=True, env=base)
        if not _cache_current(state / env.resolve().name / quick.CACHE_FILE, env):
            raise BenchFailed(f"render {env} left no usable declared-fabric cache under {state}")
        best = min(best, timed(argv, _clean_validation, runs=1, env=base))
    return best


def _cache_current(path: Path, env: Path) -> bool:
    from clusterforge.validate import quick

    try:
        _, _, body = path.read_bytes().partition(b"\n")  # the digest line, then the document
        doc = json.loads(body)
    except (OSError, ValueError):
        return False
    return doc.get("key") == quick.inventory_key(env) and doc.get("fast") is True


def _clean_validation(proc: subprocess.CompletedProcess[str]) -> str | None:
    if proc.returncode != 0:
        return f"exit {proc.returncode}: the simulated fabric must validate clean"
    doc = json.loads(proc.stdout)
    findings = doc.get("findings", [])
    return f"{len(findings)} finding(s) on the simulated fabric" if findings else None
