"""The lab's drain from inside a container: the LAB-ONLY `clusterforge` stand-in (run for real here, as
the drain hook on the monitoring node runs the lab inventory's drain argv) leaves a request; `fold`
applies it to the lab's drained.json as `clusterforge lab drain` does, and refuses an unknown host."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from clusterforge.api import load_checked
from clusterforge.lab import drain_outbox
from clusterforge.lab.technician import drained
from clusterforge.model.hooks import ALERT_PREFIX, hook_argv

ALERT_REASON = f"{ALERT_PREFIX} level 3 HbmTemperatureHigh"


def _standin(tmp_path: Path) -> tuple[Path, Path]:
    box = drain_outbox.outbox(tmp_path)
    box.mkdir()
    script = tmp_path / "clusterforge"
    script.write_text(drain_outbox.STANDIN.replace(drain_outbox.OUTBOX, str(box)))
    return script, box


def _run(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-I", str(script), *args], capture_output=True, text=True, timeout=30)


def test_drain_hook_argv_reaches_the_lab(tmp_path: Path) -> None:
    script, box = _standin(tmp_path)
    hook = load_checked(Path("inventories/lab")).inv.deploy.reboot.drain
    argv = hook_argv(hook, "gpu03", ALERT_REASON)
    assert argv == ["clusterforge", "lab", "drain", "gpu03", "--reason", ALERT_REASON, "--env", "inventories/lab"]
    p = _run(script, *argv[1:])
    assert p.returncode == 0 and "gpu03 drained: requested from" in p.stdout
    assert len(list(box.iterdir())) == 1
    assert _run(script, "lab", "resume", "gpu99").returncode == 0
    done = drain_outbox.fold(tmp_path, {"gpu03", "sm01"})
    assert [(r.get("host"), r["applied"]) for r in done] == [("gpu03", True), (None, False)]
    assert "no host 'gpu99' in this lab" in done[1]["error"]
    assert drained(tmp_path)["drained"] == ["gpu03"] and list(box.iterdir()) == []
    assert drained(tmp_path)["reasons"] == {"gpu03": ALERT_REASON}  # who drained it and why, kept
    assert drain_outbox.fold(tmp_path, {"gpu03"}) == []  # applied once


def test_standin_refuses_anything_else(tmp_path: Path) -> None:
    script, box = _standin(tmp_path)
    for args in (("deploy", "inventories/lab"), ("lab", "drain"), ("lab", "drain", "gpu01", "--env", ""),
                 ("lab", "drain", "gpu01", "--reason")):
        p = _run(script, *args)
        assert p.returncode == 1 and "only `clusterforge lab drain|resume HOST" in p.stderr
    assert list(box.iterdir()) == []
