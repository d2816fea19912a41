"""`clusterforge deploy` (pyinfra) runs gevent-patched, first thing (issue #26): unpatched, paramiko's
sockets, locks and threads blocked the gevent hub, so the hosts of a deploy ran one at a time: 256 hosts
37.8 s unpatched, 7.1 s patched on the scale lab. Other commands (and deploy --engine ansible) stay as they
were: validate's collection runs OpenSSH in threads and is slower under the patch."""

from __future__ import annotations

import subprocess
import sys

import pytest

from clusterforge.cli.entry import _pyinfra_deploy

PROBE = """
import atexit, sys
import gevent.monkey
atexit.register(lambda: print("patched" if gevent.monkey.is_module_patched("socket") else "plain"))
sys.argv = ["clusterforge", *sys.argv[1:]]
from clusterforge.cli.entry import main
main()
"""


@pytest.mark.parametrize(("argv", "patched"), [
    (["deploy", "lab"], True),
    (["deploy", "lab", "--engine", "pyinfra"], True),
    (["deploy", "lab", "--engine=pyinfra"], True),
    (["deploy", "lab", "--engine", "ansible"], False),
    (["deploy", "lab", "--engine=ansible"], False),
    (["validate", "lab"], False),
    (["apply", "plan.json"], False),
    ([], False),
])
def test_which_commands_are_patched(argv: list[str], patched: bool) -> None:
    assert _pyinfra_deploy(argv) is patched


@pytest.mark.parametrize(("argv", "said"), [(["deploy", "--help"], "patched"), (["validate", "--help"], "plain")])
def test_the_process_is_patched_before_the_command_runs(argv: list[str], said: str) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == said, proc.stderr[-2000:]
