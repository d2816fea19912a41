"""A free loopback port, and waiting for a program the test started to answer over HTTP."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request


def wait_http(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
    """Until `url` answers; raises when `proc` exits first or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise
            time.sleep(0.2)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
