"""Collection at scale (issue #26, item 5): one SSH connection per host (a private ControlMaster), a deadline
for all of a host's commands (past it the host is unreachable, the others are collected), bounded workers."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from clusterforge.collect import ssh as ssh_mod
from clusterforge.collect.plan import Target
from clusterforge.collect.ssh import SshConfig, collect


def test_a_multiplexed_argv_names_a_private_master(tmp_path: Path) -> None:
    cfg = SshConfig(known_hosts=tmp_path / "kh", control_dir=tmp_path / "cp")
    argv = cfg.argv("198.19.224.10", ("ibstat",))
    assert "ControlMaster=auto" in argv and f"ControlPath={tmp_path / 'cp'}/%C" in argv
    assert argv[-1] == "ibstat" and cfg.close_argv("198.19.224.10")[-3:] == ["-O", "exit", "root@198.19.224.10"]
    assert "ControlMaster=auto" not in SshConfig(known_hosts=tmp_path / "kh").argv("h", ("x",))


def test_a_slow_host_runs_out_of_its_time_and_the_others_are_collected(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []
    lock = threading.Lock()
    running = [0]
    most = [0]

    def fake_run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        with lock:
            seen.append(argv)
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            if "-O" in argv:
                return subprocess.CompletedProcess(argv, 0, "", "")
            host = argv[-3]
            if host.endswith("10.0.0.9"):  # the slow one: each command takes 0.4 s of its 1 s
                time.sleep(0.4)
            else:
                time.sleep(0.01)
            return subprocess.CompletedProcess(argv, 0, f"out of {argv[-1]}\n", "")
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(ssh_mod.subprocess, "run", fake_run)
    cmds = {f"c{i}": (f"tool{i}",) for i in range(5)}
    hosts = [Target(f"h{i}", f"10.0.0.{i}", cmds) for i in range(10)]
    cfg = SshConfig(known_hosts=tmp_path / "kh", host_timeout_s=1.0, parallel=4)
    obs = collect(cfg, hosts, None)
    assert list(obs.unreachable) == ["h9"] and "h9" not in obs.hosts
    assert "1 s were spent" in obs.unreachable["h9"]
    assert len(obs.hosts) == 9 and obs.hosts["h0"]["c4"] == "out of tool4\n"
    assert most[0] <= 4  # bounded
    assert sum(1 for a in seen if "-O" in a) == 10  # every host's master closed
    assert all(any(x.startswith("ControlPath=") for x in a) for a in seen)


def test_the_fabric_target_on_a_hosts_address_has_a_master_of_its_own(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The fabric is read from an SM node, which is a host too: two jobs on one address once shared a master,
    and the first to finish ended it under the other (CI: 'sm01 could not be reached: ssh failed')."""
    paths: dict[str, set[str]] = {}
    lock = threading.Lock()

    def fake_run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        cp = next(a.split("=", 1)[1] for a in argv if a.startswith("ControlPath="))
        with lock:
            paths.setdefault(argv[-1] if "-O" in argv else argv[-3], set()).add(str(Path(cp).parent))
        return subprocess.CompletedProcess(argv, 0, "out\n", "")

    monkeypatch.setattr(ssh_mod.subprocess, "run", fake_run)
    sm = Target("sm01", "10.0.0.1", {"ibstat": ("ibstat",)})
    fabric = Target("sm01", "10.0.0.1", {"ibnetdiscover": ("ibnetdiscover",)})
    obs = collect(SshConfig(known_hosts=tmp_path / "kh", parallel=2), [sm], fabric)
    assert obs.hosts["sm01"] == {"ibstat": "out\n"} and obs.fabric == {"ibnetdiscover": "out\n"}
    assert not obs.unreachable
    assert len(paths["root@10.0.0.1"]) == 2  # two masters' directories, each closed by its own job
