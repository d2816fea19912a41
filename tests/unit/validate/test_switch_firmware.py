"""Switch firmware read in-band (issue #24): phase two's `flint -d lid-<LID>[,HCA,PORT] q` per pinned switch, by
the LIDs phase one's discovery found, and the saved answers (fabric/flint-q@<switch>.txt) against the pins.

The discoveries are clusterforge.sim renders of the inventories (simulated). The switch query is a real capture
(tests/fixtures/flint-query/mlxsw-doc-..., a Spectrum switch ASIC's `mstflint -d 03:00.0 query`, its .source):
no Quantum switch's query is in the samples, and flint prints the same rows for every device, so it stands in
for a Quantum's answer here."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from cf_lab_net import cf
from clusterforge.api import Checked, load_checked
from clusterforge.collect.plan import plane_ports, sm_node
from clusterforge.collect.store import Observations, save_dir
from clusterforge.model.index import Index
from clusterforge.parse import ibnetdiscover
from clusterforge.sim import ibnetdiscover as sim
from clusterforge.validate.run import validate
from clusterforge.validate.switch_firmware import STEM, pinned_switches, query_commands

ROOT = Path(__file__).resolve().parents[3]
SPECTRUM = (ROOT / "tests" / "fixtures" / "flint-query" / "mlxsw-doc-mstflint-spectrum-switch-asic-fw-issu.txt"
            ).read_text(encoding="utf-8")
SPECTRUM_FW, SPECTRUM_PSID = "13.2010.3146", "MT_2860113033"


def _pinned(tmp: Path, source: Path, pin: str) -> Checked:
    env = tmp / source.name
    shutil.copytree(source, env)
    fw = env / "firmware.yaml"
    head = fw.read_text().split("firmware:\n", 1) if fw.exists() else ["", ""]
    fw.write_text(f"{head[0]}firmware:\n  switches:\n    - {pin}\n{head[1]}")
    return load_checked(env)


def _prod(tmp: Path, version: str = SPECTRUM_FW, psids: str = "[]") -> Checked:
    return _pinned(tmp, ROOT / "inventories" / "prod", f"{{model: QM8700, version: {version}, psids: {psids}}}")


def _discovery(index: Index, drop: str | None = None) -> str:
    fab = sim.from_index(index)
    if drop is not None:  # a switch not seen on the fabric: none of its links
        fab.links = [ln for ln in fab.links if drop not in (ln.a[0], ln.b[0])]
    return sim.render(index, fab)


def test_each_pinned_switch_is_queried_in_band_by_the_lid_discovery_found(tmp_path: Path) -> None:
    checked = _prod(tmp_path)
    index = checked.index
    text = _discovery(index)
    obs = Observations(fabric={"ibnetdiscover": text})
    cmds = query_commands(index, obs, {})
    lids = {sw.name: sw.lid for sw in ibnetdiscover.parse(text).switches}
    assert set(cmds) == {f"{STEM}{sw.name}" for sw in checked.inv.switches} and len(cmds) == len(lids)
    for stem, argv in cmds.items():
        assert argv == ("flint", "-d", f"lid-{lids[stem.removeprefix(STEM)]}", "q")


def test_no_pin_or_no_discovery_queries_nothing(tmp_path: Path) -> None:
    prod = load_checked(ROOT / "inventories" / "prod")
    assert query_commands(prod.index, Observations(fabric={"ibnetdiscover": _discovery(prod.index)}), {}) == {}
    pinned = _prod(tmp_path)
    assert query_commands(pinned.index, Observations(), {}) == {}
    # a discovery that does not parse queries nothing here (validate reports it as PARSE)
    assert query_commands(pinned.index, Observations(fabric={"ibnetdiscover": "garbage\n"}), {}) == {}


def test_rail_planes_query_each_switch_through_the_fabric_nodes_port_in_its_plane(tmp_path: Path) -> None:
    checked = _pinned(tmp_path, ROOT / "tests" / "fixtures" / "inventories" / "lab-planes",
                      "{model: QM8700, version: 27.2010.1000}")
    index = checked.index
    fab = sim.from_index(index)
    plane_of = index.switch_planes
    texts = {}
    for plane in sorted(set(plane_of.values())):
        one = dataclasses.replace(fab, links=[ln for ln in fab.links
                                              if plane_of.get(ln.a[0], plane_of.get(ln.b[0])) == plane])
        texts[f"ibnetdiscover-plane{plane}"] = sim.render(index, one)
    sm = sm_node(index)
    assert sm is not None
    via = plane_ports(index, sm)
    assert sorted(via) == [0, 1]
    cmds = query_commands(index, Observations(fabric=texts), via)
    assert set(cmds) == {f"{STEM}{name}" for name in pinned_switches(index)} and cmds
    for stem, argv in cmds.items():
        hca, port = via[plane_of[stem.removeprefix(STEM)]]
        assert argv[:2] == ("flint", "-d") and argv[2].endswith(f",{hca},{port}") and argv[3] == "q", argv


def _obs_with(index: Index, answers: dict[str, str], drop: str | None = None) -> Observations:
    return Observations(fabric={"ibnetdiscover": _discovery(index, drop),
                                **{f"{STEM}{name}": text for name, text in answers.items()}})


def test_a_switch_behind_its_pin_and_of_another_board(tmp_path: Path) -> None:
    checked = _prod(tmp_path, "13.2010.4000", "[MT_0000000063]")
    leaf = next(sw.name for sw in checked.inv.switches if sw.role == "leaf")
    report = validate(checked.index, _obs_with(checked.index, {leaf: SPECTRUM}), fabric_only=True)
    mine = [f for f in report.findings if f.subject == leaf]
    assert sorted(f.rule for f in mine) == ["FW-DRIFT", "FW-PSID"], report.findings
    drift = next(f for f in mine if f.rule == "FW-DRIFT")
    assert (drift.expected, drift.observed) == ("13.2010.4000", SPECTRUM_FW)
    assert drift.message.startswith(f"{leaf} (QM8700, rack ") and drift.inventory == ("firmware", "switches", 0)
    assert "managed switch" in drift.action  # QM8700: updated from its own OS (catalog fw_tool switch-os)
    psid = next(f for f in mine if f.rule == "FW-PSID")
    assert psid.observed == SPECTRUM_PSID and "do not cross-flash" in psid.action
    # every other pinned switch was seen but not read: one warning for them all, naming how many
    (nodata,) = [f for f in report.findings if f.rule == "FW-NO-DATA"]
    assert nodata.severity == "warning" and f"of {len(checked.inv.switches) - 1} pinned" in nodata.message


def test_a_switch_flashed_but_not_reset_is_told_to_activate(tmp_path: Path) -> None:
    checked = _prod(tmp_path, SPECTRUM_FW)
    leaf = checked.inv.switches[0].name
    # CONSTRUCTED: the real query with mstflint's `FW Version(Running)` row (an in-band burn not yet swreset)
    pending = SPECTRUM.replace(f"FW Version:            {SPECTRUM_FW}\n",
                               f"FW Version:            {SPECTRUM_FW}\nFW Version(Running):   13.2010.1006\n")
    assert pending != SPECTRUM
    report = validate(checked.index, _obs_with(checked.index, {leaf: pending}), fabric_only=True)
    (drift,) = [f for f in report.findings if f.rule == "FW-DRIFT"]
    assert drift.observed == "13.2010.1006" and "not activated yet" in drift.message
    assert f"activate ENV --switch {leaf} --how swreset" in drift.action
    # the other way round: it runs the pin, but its flash holds another version (burned, not reset)
    latent = SPECTRUM.replace(f"FW Version:            {SPECTRUM_FW}\n",
                              f"FW Version:            13.2012.1000\nFW Version(Running):   {SPECTRUM_FW}\n")
    report = validate(checked.index, _obs_with(checked.index, {leaf: latent}), fabric_only=True)
    (drift,) = [f for f in report.findings if f.rule == "FW-DRIFT"]
    assert drift.observed == "13.2012.1000" and "its next reset" in drift.message and "--reflash" in drift.action


def test_a_switch_wave_checks_that_switch_alone_and_keeps_it_under_limit(tmp_path: Path) -> None:
    checked = _prod(tmp_path, "13.2010.4000")
    names = sorted(sw.name for sw in checked.inv.switches)
    obs = _obs_with(checked.index, {name: SPECTRUM for name in names})
    everything = validate(checked.index, obs, fabric_only=True)
    assert {f.subject for f in everything.findings if f.rule == "FW-DRIFT"} == set(names)
    one = validate(checked.index, obs, fabric_only=True, switch=names[0])
    assert [f.subject for f in one.findings if f.rule.startswith("FW-")] == [names[0]]
    cap = tmp_path / "cap"
    save_dir(cap, obs)
    code, out = cf("validate", str(tmp_path / "prod"), "--from", str(cap), "--limit", "gpu0001", "--switch",
                   names[0], "--format", "json")
    rules = {(f["rule"], f["subject"]) for f in __import__("json").loads(out[out.index("{"):])["findings"]}
    assert ("FW-DRIFT", names[0]) in rules and not any(s in {n for n in names[1:]} for _, s in rules), rules
    code, out = cf("validate", str(tmp_path / "prod"), "--from", str(cap), "--switch", "spine99")
    assert code == 2 and "--switch: not a switch of" in out


def test_switches_at_their_pin_are_quiet(tmp_path: Path) -> None:
    checked = _prod(tmp_path, SPECTRUM_FW, f"[{SPECTRUM_PSID}]")
    answers = {sw.name: SPECTRUM for sw in checked.inv.switches}
    report = validate(checked.index, _obs_with(checked.index, answers), fabric_only=True)
    assert [f for f in report.findings if f.rule.startswith("FW-")] == []


def test_a_switch_missing_from_the_fabric_is_not_also_unread_and_an_empty_answer_is_unread(tmp_path: Path) -> None:
    checked = _prod(tmp_path)
    switches = sorted(sw.name for sw in checked.inv.switches)
    gone, silent = switches[0], switches[1]
    answers = {name: SPECTRUM for name in switches[2:]} | {silent: ""}
    report = validate(checked.index, _obs_with(checked.index, answers, drop=gone), fabric_only=True)
    assert any(f.rule == "FAB-DEVICE-MISSING" and f.subject == gone for f in report.findings)
    (nodata,) = [f for f in report.findings if f.rule == "FW-NO-DATA"]
    assert "of 1 pinned" in nodata.message and silent in nodata.message and gone not in nodata.message


def test_an_unparsable_answer_is_a_parse_finding_naming_its_file(tmp_path: Path) -> None:
    checked = _prod(tmp_path)
    leaf = checked.inv.switches[0].name
    obs = _obs_with(checked.index, {leaf: "-E- Cannot open device\n"})
    obs.root = tmp_path / "cap"
    report = validate(checked.index, obs, fabric_only=True)
    (parse,) = [f for f in report.findings if f.rule == "PARSE"]
    assert f"fabric/{STEM}{leaf}.txt:1:" in parse.message


@pytest.mark.parametrize("pinned", [True, False])
def test_validate_from_a_saved_capture(tmp_path: Path, pinned: bool) -> None:
    checked = _prod(tmp_path, "13.2010.4000") if pinned else load_checked(ROOT / "inventories" / "prod")
    env = tmp_path / "prod" if pinned else ROOT / "inventories" / "prod"
    leaf = checked.inv.switches[0].name
    cap = tmp_path / "cap"
    save_dir(cap, _obs_with(checked.index, {leaf: SPECTRUM}))
    code, out = cf("validate", str(env), "--from", str(cap), "--fabric-only")
    if pinned:
        assert code == 4 and f"{leaf}" in out and "FW-DRIFT" in out and "firmware.yaml:" in out, out
    else:  # no switch pin: the saved answer is not checked
        assert "FW-" not in out, out


def test_the_declared_fabric_fast_path_steps_aside_when_switches_are_pinned(tmp_path: Path) -> None:
    """validate --from DIR --fabric-only's cache (validate/quick.py) answers only what the full validator finds
    clean: with switches pinned, a capture without their queries is FW-NO-DATA, so never the fast path."""
    from clusterforge.validate.declared import _clean_as_simulated

    assert _clean_as_simulated(load_checked(ROOT / "inventories" / "prod").index)
    assert not _clean_as_simulated(_prod(tmp_path).index)
