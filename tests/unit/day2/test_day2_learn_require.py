"""`clusterforge learn ENV --require DEVICES`: a day-2 plan's learn step fails unless the new hardware was
seen and bound (its GUID would otherwise stay a placeholder in the OpenSM files)."""

from __future__ import annotations

import shutil
from pathlib import Path

from _day2_util import LAB
from typer.testing import CliRunner

from clusterforge.api import load_checked
from clusterforge.cli.main import app
from clusterforge.sim.ibnetdiscover import from_index, render


def test_require_passes_when_bound_and_exits_4_when_not(tmp_path: Path) -> None:
    env = tmp_path / "lab"
    shutil.copytree(LAB, env)
    index = load_checked(env).index
    fab = from_index(index)
    fab.remove("C-00001")
    fab.remove("C-00002")  # gpu01 is not cabled yet: the fabric does not show it
    source = tmp_path / "ibnetdiscover.txt"
    source.write_text(render(index, fab))
    runner = CliRunner()
    ok = runner.invoke(app, ["learn", str(env), "--from", str(source), "--dry-run", "--require", "leaf-su01-r0,gpu02"])
    assert ok.exit_code == 0, ok.output
    missing = runner.invoke(app, ["learn", str(env), "--from", str(source), "--dry-run", "--require", "gpu02,gpu01"])
    assert missing.exit_code == 4
    assert "not bound, GUID still unknown: gpu01" in missing.output
