"""Collection over SSH reports each host as it finishes: a progress bar on a terminal (stderr), nothing
elsewhere. Real ssh against a loopback port where nothing listens (every host unreachable, at once)."""

from __future__ import annotations

import io
import socket
import threading
from pathlib import Path
from typing import Any

from rich.console import Console

from clusterforge.cli import console
from clusterforge.cli import progress as cli_progress
from clusterforge.collect.plan import Target
from clusterforge.collect.ssh import SshConfig, collect


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _jobs(tmp_path: Path) -> tuple[SshConfig, list[Target], Target]:
    known = tmp_path / "known_hosts"
    known.write_text("")
    cfg = SshConfig(known_hosts=known, port=_closed_port(), connect_timeout_s=3, command_timeout_s=20, parallel=2)
    hosts = [Target(f"h{i}", "127.0.0.1", {"ibstat": ("ibstat",)}) for i in range(3)]
    return cfg, hosts, Target("sm", "127.0.0.1", {"ibnetdiscover": ("ibnetdiscover",)})


def test_on_done_is_called_once_per_target(tmp_path: Path) -> None:
    cfg, hosts, fabric = _jobs(tmp_path)
    done: list[str] = []
    lock = threading.Lock()

    def on_done(host: str) -> None:
        with lock:
            done.append(host)

    obs = collect(cfg, hosts, fabric, on_done)
    assert sorted(done) == ["h0", "h1", "h2", "sm"]
    assert set(obs.unreachable) == {"h0", "h1", "h2", "sm"}


def test_progress_bar_on_a_terminal_only(tmp_path: Path, monkeypatch: Any) -> None:
    cfg, hosts, fabric = _jobs(tmp_path)
    tty = io.StringIO()
    monkeypatch.setattr(console, "err", Console(file=tty, force_terminal=True, width=120))
    with cli_progress.progress("collect lab", total=len(hosts) + 1) as advance:
        collect(cfg, hosts, fabric, advance)
    assert "collect lab" in tty.getvalue() and "4/4" in tty.getvalue()
    piped = io.StringIO()
    monkeypatch.setattr(console, "err", Console(file=piped, force_terminal=False))
    with cli_progress.progress("collect lab", total=len(hosts) + 1) as advance:
        collect(cfg, hosts, fabric, advance)
    assert piped.getvalue() == ""
