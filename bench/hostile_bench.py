"""Hostile-input figures (issue 13): what refusing bad input costs, each in a fresh process
(`clusterforge check`, wall time and the child's peak RSS from getrusage).

- a ~100 KB file of nested YAML aliases (the issue: 6.5 GB before the expansion was bounded);
- a broken inventory file of N MB whose every cable has a bad length (the issue: a 50 MB one
  printed 1.2 M lines; now 200 then a count). 5 MB keeps the bench short on a 2-core machine;
  time and memory grow linearly with the size (errors of a file over 2 MB are located over the
  YAML event stream, no node tree: at 5 MB 2.9 s / 292 MB, was 13.9 s / 587 MB with the tree).
- an endless input to `clusterforge parse` (/dev/zero, refused at the 64 MB cap).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "tests" / "errors" / "_base"
CLI = [sys.executable, "-c", "import sys; from clusterforge.cli.main import app; app(sys.argv[1:])"]
# a fresh wrapper per measurement, so RUSAGE_CHILDREN's peak is this one command's
WRAP = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], capture_output=True)\n"
    "lines = len((done.stdout + done.stderr).splitlines())\n"
    "print(done.returncode, lines, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def _run(args: list[str]) -> tuple[float, float, int, int]:
    """(seconds, peak RSS MB of the command, exit code, lines it printed)."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", WRAP, *CLI, *args], capture_output=True, text=True,
                          timeout=900, check=True)
    seconds = time.perf_counter() - t0
    code, lines, rss_kb = (int(x) for x in done.stdout.split())
    return seconds, rss_kb / 1024, code, lines


def _env(tmp: Path, name: str, extra: str) -> Path:
    env = tmp / name
    shutil.copytree(BASE, env)
    (env / "zz.yaml").write_text(extra, encoding="utf-8")
    return env


def alias_bomb() -> str:
    lines = ["l0: &a0 [" + ",".join(["lol"] * 10) + "]"]
    lines += [f"l{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    lines += [f"k{i}: *a9" for i in range(10_000)]  # ~100 KB; each line alone is 10^9 scalars
    return "\n".join(lines) + "\n"


def broken(mb: int) -> str:
    row = "  - {{id: X-{i}, a: leaf01/1, b: spine01/1, media: AOC, length_m: bad}}\n"
    rows, size, i = ["cables:\n"], 0, 0
    while size < mb * 1024 * 1024:
        line = row.format(i=i)
        rows.append(line)
        size += len(line)
        i += 1
    return "".join(rows)


def hostile(tmp: Path) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    bomb = _env(tmp, "bomb", alias_bomb())
    for label, args, size in (
        ("baseline: the valid base inventory (check)", ["check", str(BASE)], None),
        ("alias bomb (check)", ["check", str(bomb)], (bomb / "zz.yaml").stat().st_size),
        ("broken 5 MB file (check)", ["check", str(_env(tmp, "broken", broken(5)))], 5 * 1024 * 1024),
        ("/dev/zero (parse ibstat)", ["parse", "ibstat", "/dev/zero"], None),
    ):
        seconds, rss, code, lines = _run(args)
        out.append({"bench": "hostile", "input": label, "bytes": size, "exit": code, "lines_printed": lines,
                    "seconds": round(seconds, 2), "peak_rss_mb": round(rss)})
    return out


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        for row in hostile(Path(d)):
            print(row)
