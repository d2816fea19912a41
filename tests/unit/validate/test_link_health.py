"""A port's physical layer from mlxlink (validate/link_health.py, inventory collect.link_health): the real
captures of clean links pass; a link past its FEC, losing its margin, flapping, or an optic running dim or hot
is named by cable, port and lane. Where no real capture shows the fault the input is constructed from a real
one (marked so)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from cf_lab_inventory import index_of, lab_data
from clusterforge.api import load_checked
from clusterforge.collect.plan import default_targets, mlxlink_port, mlxlink_stem
from clusterforge.collect.store import Observations
from clusterforge.parse import mlxlink
from clusterforge.validate.coverage import coverage_findings
from clusterforge.validate.link_health import check_link_health
from clusterforge.validate.run import validate

ROOT = Path(__file__).resolve().parents[3]
FIX = ROOT / "tests" / "fixtures" / "mlxlink"
CLEAN = next(FIX.glob("bf3-mft4.30-m-c-*.txt")).read_text(encoding="utf-8")  # a clean 4x link, counters, DAC
FRAGMENT = next(FIX.glob("cx6-hdr2x-mft4.24-show-counters-*.txt")).read_text(encoding="utf-8")  # raw BER 1E-8
INDEX = index_of(lab_data())  # gpu01 mlx5_0/1 is cable C-00001, an AOC


def _with(text: str, label: str, value: str) -> str:
    """CONSTRUCTED from a real capture: one row's value replaced, its column kept."""
    lines = text.split("\n")
    i = next(k for k, ln in enumerate(lines) if ln.startswith(label + " ") or ln.startswith(label + ":"))
    head = lines[i].split(":", 1)[0]
    lines[i] = f"{head}: {value}"
    return "\n".join(lines)


def _check(text: str, host: str = "gpu01", hca: str = "mlx5_0", port: int = 1) -> list[tuple[str, str, str]]:
    found = check_link_health(INDEX, host, {(hca, port): mlxlink.parse(text)})
    return [(f.rule, f.severity, f.message) for f in found]


def test_clean_real_links_pass() -> None:
    assert _check(CLEAN) == []
    assert _check(FRAGMENT) == []  # a raw BER of 1E-8 on HDR with RS-FEC is healthy


def test_raw_ber_past_the_fec_names_cable_port_and_worst_lane_constructed() -> None:
    text = _with(_with(CLEAN, "Raw Physical BER", "3E-4"), "Raw Physical Errors Per Lane", "12,9,88213,40")
    ((rule, severity, message),) = _check(text)
    assert (rule, severity) == ("LINK-BER", "error")
    assert message.startswith("gpu01 mlx5_0/1 (cable C-00001, AOC 10 m): raw BER 3.0e-4 is past what the FEC")
    assert "lane 2 has the most raw errors (88,213 of 88,274)" in message


def test_a_decaying_optic_is_a_warning_before_it_fails_constructed() -> None:
    """BER up by 10^3 from the real fragment's 1E-8 -> 1E-5: the FEC still corrects, the margin is gone."""
    ((rule, severity, message),) = _check(_with(FRAGMENT, "Raw Physical BER", "1E-5"))
    assert (rule, severity) == ("LINK-BER", "warning") and "lost its margin" in message


def test_errors_past_the_fec_are_an_error_constructed() -> None:
    found = _check(_with(FRAGMENT, "Symbol BER", "5E-11"))
    assert [(r, s) for r, s, _ in found] == [("LINK-BER", "error")]
    assert "symbol BER 5.0e-11 is past 1.0e-12: the application sees errors" in found[0][2]


def test_a_flapping_link_constructed() -> None:
    found = _check(_with(_with(CLEAN, "Link Down Counter", "3"), "Link Error Recovery Counter", "17"))
    assert [(r, s) for r, s, _ in found] == [("LINK-FLAP", "warning")]
    assert "3 link down, 17 error recoveries in the 25,075 min since the counters were cleared" in found[0][2]


def test_a_dim_lane_and_a_hot_optic_constructed() -> None:
    """CONSTRUCTED: the real module section with an optic's readings (no real optical capture has them)."""
    text = _with(_with(CLEAN, "Rx Power Current [dBm]", "-1.2,-1.5,-12.8,-1.1"), "Temperature [C]", "81")
    ((rule, severity, message),) = _check(text)
    assert (rule, severity) == ("LINK-MODULE", "warning")
    assert "module FS Q28-PC03 s/n S2202655321-1" in message
    assert "lane 2 Rx -12.8 dBm (min -10)" in message and "module at 81 °C (max 75)" in message
    # the module's own alarm range, where mlxlink prints one, wins over the catalog's default
    own = _with(CLEAN, "Rx Power Current [dBm]", "-1.2,-1.5,-9.0,-1.1 [-8.5..2.4]")
    assert "lane 2 Rx -9 dBm (min -8.5)" in _check(own)[0][2]


def test_a_copper_cable_has_no_module_readings_to_judge() -> None:
    data = lab_data()
    data["cables"][0]["media"] = "DAC"
    data["cables"][0]["length_m"] = 1
    index = index_of(data)
    text = _with(CLEAN, "Rx Power Current [dBm]", "-30,-30,-30,-30")
    assert check_link_health(index, "gpu01", {("mlx5_0", 1): mlxlink.parse(text)}) == []


def test_collect_asks_each_cabled_port_and_requires_the_answer(tmp_path: Path) -> None:
    data = lab_data()
    assert not any(s.startswith("mlxlink@") for t in default_targets(INDEX, dict.fromkeys(INDEX.addresses.mgmt, ""))[0]
                   for s in t.commands)  # off by default
    data["collect"] = {"link_health": True}
    index = index_of(data)
    hosts, _ = default_targets(index, dict.fromkeys(index.addresses.mgmt, ""))
    gpu01 = next(t for t in hosts if t.host == "gpu01")
    assert gpu01.commands[mlxlink_stem("mlx5_0", 1)] == ("mlxlink", "-d", "mlx5_0", "-p", "1", "-m", "-c")
    assert mlxlink_port("mlxlink@mlx5_0.1") == ("mlx5_0", 1) and mlxlink_port("mlxlink@x.y") is None
    missing = [f for f in coverage_findings(index, Observations(hosts={"gpu01": {"ibstat": ""}}))
               if f.subject == "gpu01"]
    assert any("no mlxlink@mlx5_0.1 output: that port's BER and module were not checked" in f.message
               for f in missing)


def test_validate_reads_saved_mlxlink_outputs_and_a_garbled_one_is_a_parse_finding(tmp_path: Path) -> None:
    env = tmp_path / "lab"
    shutil.copytree(ROOT / "inventories" / "lab", env)
    site = env / "site.yaml"
    doc = yaml.safe_load(site.read_text())
    doc["collect"] = {"link_health": True}
    site.write_text(yaml.safe_dump(doc, sort_keys=False))
    index = load_checked(env).index
    bad = _with(CLEAN, "Raw Physical BER", "3E-4")
    obs = Observations(hosts={"gpu01": {mlxlink_stem("mlx5_0", 1): bad, mlxlink_stem("mlx5_1", 1): "garbage\n"}})
    report = validate(index, obs)
    mine = [f for f in report.findings if f.subject.startswith("gpu01 mlx5_")]
    assert any(f.rule == "LINK-BER" and f.subject == "gpu01 mlx5_0/1" for f in mine)
    assert any(f.rule == "PARSE" and "mlxlink@mlx5_1.1.txt:1" in f.message for f in report.findings)


@pytest.mark.parametrize("name", sorted(p.name for p in FIX.glob("*.txt")))
def test_every_real_capture_is_judged_without_an_exception(name: str) -> None:
    found = check_link_health(INDEX, "gpu01", {("mlx5_0", 1): mlxlink.parse((FIX / name).read_text())})
    assert all(f.rule.startswith("LINK-") for f in found)
