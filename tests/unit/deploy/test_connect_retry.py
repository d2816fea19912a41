"""A connect that is reset is tried again (deploy.connect_retries), for the deploy and the collectors.

The deploy's test is real: pyinfra's paramiko connector against a local TCP listener that resets every
connection it accepts; the listener counts how many times it was reached."""

from __future__ import annotations

import dataclasses
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterforge.api import load_checked
from clusterforge.collect.live import ssh_config
from clusterforge.collect.ssh import SshConfig
from clusterforge.deploy.api import ssh_from_inventory
from clusterforge.deploy.component import HostPlan
from clusterforge.deploy.runner import SshSettings, run_deploy

ROOT = Path(__file__).resolve().parents[3]


class ResettingListener:
    """Accepts on 127.0.0.1 and resets each connection at once (SO_LINGER 0), counting them."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[ResettingListener]:
    lst = ResettingListener()
    yield lst
    lst.close()


@pytest.mark.parametrize("retries", [0, 2])
def test_a_reset_connect_is_tried_again(plans: dict[str, HostPlan], listener: ResettingListener,
                                        tmp_path: Path, retries: int) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("")
    plan = dataclasses.replace(plans["gpu01"], address="127.0.0.1")
    ssh = SshSettings(port=listener.port, known_hosts=known, connect_timeout_s=5, connect_retries=retries)
    [result] = run_deploy([plan], ssh, parallel=1)
    assert result.status == "unreachable", result
    assert listener.accepted == retries + 1


def test_the_inventory_setting_reaches_both_engines() -> None:
    checked = load_checked(ROOT / "inventories" / "lab")
    env = ROOT / "inventories" / "lab"
    assert checked.index.inv.deploy.connect_retries == 2
    assert ssh_from_inventory(env, checked.index).connect_retries == 2
    cfg = ssh_config(env, checked.index)
    assert cfg.connect_retries == 2
    known = Path("/nonexistent/known_hosts")
    assert "ConnectionAttempts=3" in SshConfig(known_hosts=known, connect_retries=2).argv("a", ("true",))
    assert "ConnectionAttempts=1" in SshConfig(known_hosts=known, connect_retries=0).argv("a", ("true",))
