"""A component's apply script reaches the host on stdin (`sh -s`), not as the command's one argument: the
monitoring server's inline uploads pass Linux's 128 KiB limit on one argument (MAX_ARG_STRLEN: "Argument list
too long", as the prod rehearsal's sm02 failed), and stdin has none. Shown with a real shell here."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from clusterforge.api import load_checked
from clusterforge.deploy.changes import component_changes
from clusterforge.deploy.desired import host_plans
from clusterforge.deploy.facts import HostFacts
from clusterforge.deploy.options import DeployOptions
from clusterforge.deploy.runner import HostSession, apply_script

ROOT = Path(__file__).resolve().parents[3]
ARG_MAX_ONE = 128 * 1024


class _Host:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def run_shell_command(self, command: Any, **kw: Any) -> tuple[bool, Any]:
        self.calls.append((command.get_raw_value(), kw))
        proc = subprocess.run(["sh", "-c", command.get_raw_value()], input=kw.get("_stdin", ""), text=True,
                              capture_output=True, timeout=60, check=False)

        class Out:
            stdout_lines = proc.stdout.splitlines()
            stderr_lines = proc.stderr.splitlines()
        return proc.returncode == 0, Out()


def test_a_script_past_one_arguments_limit_runs_from_stdin(tmp_path: Path) -> None:
    plans = host_plans(load_checked(ROOT / "inventories" / "prod").index, DeployOptions("prod"))
    script = max((apply_script(component_changes(c, HostFacts(systemd=True))) for p in plans.values()
                  for c in p.components), key=len)
    assert len(script) > ARG_MAX_ONE  # prod's monitoring server: too long for one argument
    with pytest.raises(OSError, match="Argument list too long"):  # what one argument of that size meets
        subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=False)
    session = HostSession.__new__(HostSession)
    session.host = _Host()  # type: ignore[assignment]
    marker = tmp_path / "ran"
    out = session.run(f"echo {'x' * 200_000} > /dev/null\necho done > {marker}\necho ok", "apply")
    assert out == "ok" and marker.read_text() == "done\n"
    ((command, kw),) = session.host.calls  # type: ignore[attr-defined]
    assert command == "sh -s" and len(kw["_stdin"]) > ARG_MAX_ONE
