"""LAB-ONLY: keeps the monitoring stand-ins' values moving while a `lab fault errors|hot|ecc` holds.

A monitoring fault is a list of entries in the lab's monitoring fault journal
(`<state>/monitoring-faults.json`, see monitoring_faults.py); each names one value in a stand-in
file on the lab machine (bind-mounted read-only into the container at /var/lib/cf-lab) and how it
moves:

  {"path": ".../sysfs/class/infiniband/mlx5_0/ports/1/counters/symbol_error", "kind": "counter",
   "base": 12, "per_s": 0.17, "t0": 1796120000.0, "original": "12"}
  {"path": ".../dcgm/metrics.prom", "kind": "prom", "metric": "DCGM_FI_DEV_MEMORY_TEMP", "gpu": "0",
   "set": 91, "per_s": 0, "t0": ..., "original": "45"}

(a prom entry with "integer": true is a counter too: written as whole numbers.)

value = (set, else base) + per_s x (now - t0): a counter rises with wall time, a gauge is held where the
fault put it. Run as a process (`python3 fault_driver.py run JOURNAL LAB_JSON`), it rewrites every value
once a second, atomically (node_exporter and the dcgm stand-in never read half a file), until the journal
holds no entry or the lab is gone (its lab.json removed by `lab down`). Stdlib only.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

MARK = "clusterforge-lab-fault-driver"
TICK_S = 1.0


class StandinMissing(Exception):
    """The stand-in file or its line is not there (the monitoring stand-ins are not set up)."""


def write_file(path: str, text: str) -> None:
    tmp = f"{path}.cf-fault.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def prom_line(metric: str, gpu: str) -> re.Pattern[str]:
    """One dcgm-exporter sample line of `metric` for GPU `gpu`: NAME{...gpu="N"...} VALUE."""
    return re.compile(r'^(' + re.escape(metric) + r'\{[^}]*\bgpu="' + re.escape(gpu) + r'"[^}]*\}[ \t]+)(\S+)(.*)$',
                      re.M)


def read_value(entry: dict[str, Any]) -> str:
    """The value `entry` names, as its file holds it now."""
    path = entry["path"]
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StandinMissing(f"{path}: no such file") from None
    if entry["kind"] == "counter":
        value = text.strip()
        if not value.isdigit():
            raise StandinMissing(f"{path}: not a counter value: {value[:40]!r}")
        return value
    m = prom_line(entry["metric"], entry["gpu"]).search(text)
    if m is None:
        raise StandinMissing(f"{path}: no {entry['metric']} line for GPU {entry['gpu']}")
    return m.group(2)


def _fmt(entry: dict[str, Any], value: float) -> str:
    if entry["kind"] == "counter" or entry.get("integer") or float(value).is_integer():
        return str(int(value))
    return f"{value:g}"


def value_at(entry: dict[str, Any], now: float) -> str:
    start = float(entry["set"]) if entry.get("set") is not None else float(entry["base"])
    return _fmt(entry, start + float(entry.get("per_s") or 0.0) * max(0.0, now - float(entry["t0"])))


def apply(entries: list[dict[str, Any]], values: list[str]) -> None:
    """Write values[i] where entries[i] says (per file: one read, one atomic write)."""
    by_path: dict[str, list[int]] = {}
    for i, e in enumerate(entries):
        by_path.setdefault(e["path"], []).append(i)
    for path, idx in by_path.items():
        if entries[idx[0]]["kind"] == "counter":
            write_file(path, values[idx[-1]] + "\n")
            continue
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            continue  # rewritten by the lab just now: the next tick writes it again
        for i in idx:
            text = prom_line(entries[i]["metric"], entries[i]["gpu"]).sub(_with_value(values[i]), text)
        write_file(path, text)


def _with_value(value: str) -> Callable[[re.Match[str]], str]:
    return lambda m: m.group(1) + value + m.group(3)


def entries_of(journal: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for f in journal.get("faults", []) for e in f.get("entries", [])]


def load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"faults": []}
    return data if isinstance(data, dict) else {"faults": []}


@contextmanager
def locked(journal: Path) -> Iterator[None]:
    """The journal's lock (`<journal>.lock`, flock): a tick reads the journal and writes its values under it, and
    so do `lab fault` and `lab heal`, so that no tick writes a value from a journal read before theirs."""
    if not journal.parent.is_dir():  # a lab brought down: no journal, nothing to hold
        yield
        return
    fd = os.open(journal.with_name(journal.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def run(journal: Path, lab_json: Path) -> int:
    while lab_json.exists():
        with locked(journal):
            try:
                entries = entries_of(load(journal))
            except ValueError:  # caught mid-rewrite (the journal is written atomically: should not happen)
                entries = []
            if not entries:
                return 0
            now = time.time()
            apply(entries, [value_at(e, now) for e in entries])
        time.sleep(TICK_S)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "run" and sys.argv[4] == MARK:
        sys.exit(run(Path(sys.argv[2]), Path(sys.argv[3])))
    print("usage: fault_driver.py run JOURNAL LAB_JSON " + MARK, file=sys.stderr)
    sys.exit(2)
