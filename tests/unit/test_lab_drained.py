"""The lab's drain state (drained.json) under hooks that run at once, as a wave's drain hooks do."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from clusterforge.lab.errors import FaultError
from clusterforge.lab.technician import drained, set_drained

HOSTS = {f"gpu0{i}" for i in range(1, 5)}


def _toggle(state_dir: str, host: str, rounds: int) -> None:
    for _ in range(rounds):
        set_drained(Path(state_dir), host, True, HOSTS)
        set_drained(Path(state_dir), host, False, HOSTS)


def test_hooks_at_once_lose_no_change(tmp_path: Path) -> None:
    """Four processes drain and resume their own host 40 times each: every event is kept and every host
    ends resumed (without the lock, one process wrote back what it had read and another's change was lost)."""
    rounds = 40
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_toggle, args=(str(tmp_path), h, rounds)) for h in sorted(HOSTS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    data = drained(tmp_path)
    assert data["drained"] == []
    events = data["events"]
    assert isinstance(events, list) and len(events) == 2 * rounds * len(HOSTS)
    for host in HOSTS:
        assert sum(1 for e in events if e["host"] == host) == 2 * rounds


def test_set_drained_reports_a_change_and_refuses_an_unknown_host(tmp_path: Path) -> None:
    assert set_drained(tmp_path, "gpu01", True, HOSTS) is True
    assert set_drained(tmp_path, "gpu01", True, HOSTS) is False
    assert drained(tmp_path)["drained"] == ["gpu01"]
    assert set_drained(tmp_path, "gpu01", False, HOSTS) is True
    with pytest.raises(FaultError, match="no host 'gpu99'"):
        set_drained(tmp_path, "gpu99", True, HOSTS)
