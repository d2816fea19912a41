"""`clusterforge validate ENV --limit HOSTS`: a day-2 wave validates its own hosts (findings about other
hosts, e.g. ones a later wave changes, are not its business)."""

from __future__ import annotations

from pathlib import Path

from _day2_util import LAB
from typer.testing import CliRunner

from clusterforge.api import load_checked
from clusterforge.cli.main import app
from clusterforge.sim.ibnetdiscover import from_index, render


def test_limit_reports_only_the_named_hosts(tmp_path: Path) -> None:
    index = load_checked(LAB).index
    fab = from_index(index)
    fab.remove("C-00010")  # gpu05's second rail
    saved = tmp_path / "saved"
    (saved / "fabric").mkdir(parents=True)
    (saved / "fabric" / "ibnetdiscover.txt").write_text(render(index, fab))
    runner = CliRunner()
    base = ["validate", str(LAB), "--from", str(saved), "--fabric-only"]
    assert runner.invoke(app, base).exit_code == 4
    hit = runner.invoke(app, [*base, "--limit", "gpu05,gpu06"])
    assert hit.exit_code == 4 and "C-00010" in hit.output
    other = runner.invoke(app, [*base, "--limit", "gpu01,gpu02"])
    assert other.exit_code == 0, other.output
    bad = runner.invoke(app, [*base, "--limit", "gpu99"])
    assert bad.exit_code == 2 and "not a node" in bad.output
    # a range, as a day-2 wave writes its hosts
    assert runner.invoke(app, [*base, "--limit", "gpu[05-06]"]).exit_code == 4
    assert runner.invoke(app, [*base, "--limit", "gpu[01-02],sm01"]).exit_code == 0
    past = runner.invoke(app, [*base, "--limit", "gpu[01-09]"])
    assert past.exit_code == 2 and "gpu09" in past.output
    broken = runner.invoke(app, [*base, "--limit", "gpu[02-01]"])
    assert broken.exit_code == 2 and "runs backwards" in broken.output
