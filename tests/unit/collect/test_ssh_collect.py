"""Collection over SSH: an unreachable host becomes an UNREACHABLE record, never a crash, and
the others are still collected. Uses loopback only (a port where nothing listens)."""

from __future__ import annotations

import socket
from pathlib import Path

from clusterforge.collect.plan import Target
from clusterforge.collect.ssh import SshConfig, collect


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nothing listens there


def test_unreachable_host_is_recorded_not_raised(tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("")
    cfg = SshConfig(known_hosts=known, port=_closed_port(), connect_timeout_s=3, command_timeout_s=20)
    hosts = [Target("h1", "127.0.0.1", {"ibstat": ("ibstat",)}), Target("h2", "127.0.0.1", {"ibstat": ("ibstat",)})]
    obs = collect(cfg, hosts, Target("sm", "127.0.0.1", {"ibnetdiscover": ("ibnetdiscover",)}))
    assert set(obs.unreachable) == {"h1", "h2", "sm"}
    assert all("refused" in reason.lower() or "connect" in reason.lower() for reason in obs.unreachable.values())
    assert obs.hosts == {} and obs.fabric == {}


def test_ssh_argv_verifies_host_keys_and_quotes_the_command(tmp_path: Path) -> None:
    cfg = SshConfig(known_hosts=tmp_path / "kh", identity=tmp_path / "id")
    argv = cfg.argv("10.0.0.1", ("nvidia-smi", "--query-gpu=index,name", "--format=csv"))
    assert "StrictHostKeyChecking=yes" in argv and f"UserKnownHostsFile={tmp_path / 'kh'}" in argv
    assert "BatchMode=yes" in argv and "ServerAliveInterval=5" in argv
    assert argv[-1] == "nvidia-smi --query-gpu=index,name --format=csv"
    hostile = cfg.argv("10.0.0.1", ("echo", "$(reboot); rm -rf /"))
    assert hostile[-1] == "echo '$(reboot); rm -rf /'"
