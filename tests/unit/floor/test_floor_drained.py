"""The floor's drained nodes (issue #37 item 2): the scheduler's `sinfo -R`, through `deploy.reboot.reasons`,
on the page by host; a hook that fails is a banner, never a floor with nobody drained."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from typer.testing import CliRunner

from cf_lab_inventory import LAB, lab_index
from clusterforge.cli.main import app
from clusterforge.floor.live import Reading, live_doc
from clusterforge.lab.technician import SINFO_FORMAT, sinfo_reasons
from clusterforge.parse.sinfo_reasons import parse

REAL = (Path(__file__).resolve().parents[2] / "fixtures" / "sinfo-R"
        / "unige-baobab-gres-core-mismatch-truncated-reasons.txt")


def _lab_state() -> dict[str, object]:
    return {"drained": ["gpu03", "gpu01"], "reasons": {"gpu01": "cf-alert: level 3 HbmTemperatureHigh"},
            "events": [{"host": "gpu01", "event": "drain", "when": 1_765_000_000.0},
                       {"host": "gpu03", "event": "drain", "when": 1_765_000_100.0}]}


def test_the_labs_stand_in_prints_what_the_real_parser_reads() -> None:
    text = sinfo_reasons(_lab_state(), "operator")
    rows = parse(text)
    assert [(r.nodes, r.reason, r.user, r.state) for r in rows] == [
        (("gpu01",), "cf-alert: level 3 HbmTemperatureHigh", "operator", "drain"),
        (("gpu03",), "cf-lab: drained", "operator", "drain")]
    assert rows[0].since.startswith("2025-12-0")  # local time, as sinfo prints it
    assert SINFO_FORMAT.split()[-1] == "%N"
    assert parse(sinfo_reasons({"drained": [], "events": []}, "x")) == ()


def test_drained_nodes_by_host_and_the_undeclared_counted() -> None:
    index = lab_index()
    live = live_doc(index, {"scheduler": Reading(sinfo_reasons(_lab_state(), "root"), "t", None, "sinfo -R")}, "t")
    gpu01 = live["hosts"]["gpu01"]
    assert gpu01["drained"]["reason"] == "cf-alert: level 3 HbmTemperatureHigh" and gpu01["level"] == 0
    assert live["hosts"]["gpu03"]["drained"]["state"] == "drain" and "gpu02" not in live["hosts"]
    assert live["sources"]["scheduler"] == {"state": "ok", "where": "sinfo -R", "read_at": "t", "error": None,
                                            "undeclared": 0}
    # the real capture names nodes of another cluster: counted, never placed on this floor
    real = live_doc(index, {"scheduler": Reading(REAL.read_text(), "t", None, "sinfo -R")}, "t")
    assert real["hosts"] == {} and real["sources"]["scheduler"]["undeclared"] == 49


def test_a_scheduler_that_fails_or_says_something_else_is_a_banner() -> None:
    index = lab_index()
    gone = live_doc(index, {"scheduler": Reading(sinfo_reasons(_lab_state(), "root"), "t0", "exit 1: no lab",
                                                 "sinfo -R")}, "t1")
    assert gone["sources"]["scheduler"]["state"] == "stale" and gone["hosts"]["gpu01"]["drained"]
    bad = live_doc(index, {"scheduler": Reading("gpu01 drained\n", "t", None, "sinfo -R -h")}, "t")
    assert bad["sources"]["scheduler"]["state"] == "bad" and "not sinfo -R's output" in \
        bad["sources"]["scheduler"]["error"] and bad["hosts"] == {}


def _env(tmp_path: Path, hook: list[str]) -> Path:
    env = tmp_path / "lab"
    shutil.copytree(LAB, env)
    services = env / "services.yaml"
    data = yaml.safe_load(services.read_text())
    data["deploy"]["reboot"]["reasons"] = hook
    services.write_text(yaml.safe_dump(data))
    return env


def test_the_command_runs_the_hook_without_a_shell(tmp_path: Path) -> None:
    """The hook's argv is run as it is (printf here, standing in for sinfo: its text constructed); a `$(...)`
    in it stays text; a hook that exits non-zero is the banner's reason."""
    env = _env(tmp_path, ["printf", "%s\\n%s\\n", "REASON          NODELIST", "cf-health: $(x) gpu02"])
    res = CliRunner().invoke(app, ["floor", str(env), "--out", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    live = json.loads((tmp_path / "site" / "live.json").read_text())
    assert live["hosts"]["gpu02"]["drained"]["reason"] == "cf-health: $(x)"
    assert live["sources"]["scheduler"]["state"] == "ok"
    failing = _env(tmp_path / "f", ["sh", "-c", "echo 'slurm_load_node: Unable to contact slurm controller' >&2; "
                                    "exit 1"])
    res = CliRunner().invoke(app, ["floor", str(failing), "--out", str(tmp_path / "site2")])
    live = json.loads((tmp_path / "site2" / "live.json").read_text())
    scheduler = live["sources"]["scheduler"]
    assert scheduler["state"] == "missing" and scheduler["error"] == \
        "exit 1: slurm_load_node: Unable to contact slurm controller"
    missing = _env(tmp_path / "m", ["/nonexistent/sinfo", "-R"])
    res = CliRunner().invoke(app, ["floor", str(missing), "--out", str(tmp_path / "site3")])
    assert "No such file" in json.loads((tmp_path / "site3" / "live.json").read_text())["sources"]["scheduler"][
        "error"]


def test_the_lab_inventory_declares_its_stand_in() -> None:
    assert lab_index().inv.deploy.reboot.reasons[:3] == ["clusterforge", "lab", "reasons"]


def test_the_hook_takes_no_placeholders() -> None:
    from pydantic import ValidationError

    from clusterforge.model.inventory import RebootPolicy

    try:
        RebootPolicy(reasons=["sinfo", "-R", "-n", "{host}"])
    except ValidationError as exc:
        assert "takes no {host}" in str(exc)
    else:
        raise AssertionError("a reasons hook with {host} was taken")
