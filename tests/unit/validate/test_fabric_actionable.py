"""Findings a technician can act on (issue 13, section 6): each injected fault is one finding that
says where to go (rack and U of every end, the trunk and patch panels), what is there (the label on
the cable at each port), and what to do. Faults are injected into the simulated ibnetdiscover text
of the declared fabric, as test_fabric_faults.py does."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.api import Checked, load_checked
from clusterforge.cli.main import app
from clusterforge.collect.store import Observations
from clusterforge.model import Inventory
from clusterforge.model.index import Index
from clusterforge.parse import ibnetdiscover
from clusterforge.parse.iblinkinfo import IblinkinfoNode, IblinkinfoPort, IblinkinfoReport
from clusterforge.sim.ibnetdiscover import SimFabric, SimLink, from_index, render
from clusterforge.validate.fabric import diff_fabric
from clusterforge.validate.findings import Finding
from clusterforge.validate.run import validate

ROOT = Path(__file__).resolve().parents[3]
MYSTERY = "0x0002c90300ffff01"


@pytest.fixture(scope="module")
def prod() -> Checked:
    return load_checked(ROOT / "inventories" / "prod")


def run(index: Index, fab: SimFabric) -> list[Finding]:
    findings = diff_fabric(index, ibnetdiscover.parse(render(index, fab)))
    for f in findings:  # no finding ever prints a placeholder for the technician to fill in
        text = " ".join([f.message, f.action, f.floor or "", *f.details])
        assert "<lid>" not in text and "<port>" not in text, text
    return findings


def without(index: Index, *devices: str) -> SimFabric:
    """The declared fabric with every link of `devices` gone: the devices are off (not discovered)."""
    fab = from_index(index)
    fab.links = [lk for lk in fab.links if lk.a[0] not in devices and lk.b[0] not in devices]
    return fab


def add_switch(fab: SimFabric, desc: str, plugs: dict[int, tuple[str, None, int]]) -> None:
    """An undeclared switch whose port p reaches plugs[p] (the declared link there, if any, unplugged)."""
    fab.guid[("mystery", None)] = MYSTERY
    fab.desc[("mystery", None)] = desc
    for port, at in plugs.items():
        fab.links = [lk for lk in fab.links if at not in (lk.a, lk.b)]
        fab.links.append(SimLink(("mystery", None, port), at, "4x", "HDR", f"X{port}"))


def with_labels(checked: Checked, labels: dict[str, str]) -> Index:
    data = checked.inv.model_dump(mode="json")
    for cable in data["cables"]:
        if cable["id"] in labels:
            cable["label"] = labels[cable["id"]]
    return Index(Inventory.model_validate(data))


# -- an undeclared switch ---------------------------------------------------------------------------


def test_undeclared_switch_names_the_declared_ports_it_occupies(lab: Checked) -> None:
    fab = from_index(lab.index)
    add_switch(fab, "MF0;sw-5a1b:MQM8700/U1", {1: ("leaf-su01-r0", None, 21), 2: ("leaf-su01-r0", None, 22)})
    (f,) = run(lab.index, fab)  # the two displaced uplinks are part of it, not two FAB-MISSING
    assert (f.rule, f.severity, f.subject) == ("FAB-UNKNOWN-DEVICE", "error", f"switch {MYSTERY}")
    assert "plugged into leaf-su01-r0 ports 21/22" in f.message
    assert f.details == (
        "at leaf-su01-r0/21 (its port 1): declared cable C-00020 to spine01/1 is expected there",
        "at leaf-su01-r0/22 (its port 2): declared cable C-00021 to spine01/2 is expected there",
    )
    assert f.floor == "plugged into leaf-su01-r0 in rack lab-su01-net U2"
    assert "plug the declared cables back" in f.action


def test_undeclared_switch_on_free_ports_is_a_warning(lab: Checked) -> None:
    fab = from_index(lab.index)
    add_switch(fab, "sw-5a1b", {1: ("leaf-infra01", None, 40)})
    (f,) = run(lab.index, fab)
    assert (f.rule, f.severity) == ("FAB-UNKNOWN-DEVICE", "warning")
    assert f.details == ("at leaf-infra01/40 (its port 1): no cable is declared there",)


def test_unknown_switch_in_the_place_of_a_declared_one_is_named_as_such(lab: Checked) -> None:
    fab = from_index(lab.index)
    spine02 = [lk for lk in fab.links if "spine02" in (lk.a[0], lk.b[0])]
    fab.links = [lk for lk in fab.links if lk not in spine02]
    fab.guid[("mystery", None)] = MYSTERY
    fab.desc[("mystery", None)] = "MT4123 Quantum Mellanox Technologies"
    for lk in spine02:
        mine, other = (lk.a, lk.b) if lk.a[0] == "spine02" else (lk.b, lk.a)
        fab.links.append(SimLink(("mystery", None, mine[2]), other, "4x", "HDR", lk.cable))
    (f,) = run(lab.index, fab)  # not also a missing spine02
    assert f.rule == "FAB-UNKNOWN-DEVICE" and f.severity == "error"
    assert f"where spine02 is declared ({len(spine02)} of its cables reach it)" in f.message
    assert f.action.startswith("if it is spine02 (rack lab-core01 U4), give it the node description 'spine02'")


# -- whole devices missing ---------------------------------------------------------------------------


def test_missing_spine_is_one_finding_with_its_links_under_it(prod: Checked) -> None:
    (f,) = run(prod.index, without(prod.index, "spine02"))
    assert (f.rule, f.severity, f.subject) == ("FAB-DEVICE-MISSING", "error", "spine02")
    assert f.message.startswith(
        "spine02 (rack prod-core01 U2) is not seen on the fabric: power, management, or the switch itself"
    )
    declared = [c for c in prod.inv.cables if "spine02" in (c.a.device, c.b.device)]
    assert len(f.details) == len(declared) == 28
    assert f.details[0] == (
        "spine02/1 - leaf-su01-r0/22 (rack prod-su01-net U1): cable leaf-su01-r0.22, trunk "
        "T-prod-core01-prod-su01-net-1 lane group 1, patch panels prod-core01-pp01 (rack prod-core01 U42) / "
        "prod-su01-net-pp01 (rack prod-su01-net U42)"
    )
    assert prod.inv.switches[int(f.inventory[1])].name == "spine02" and f.inventory[0] == "switches"
    assert f.floor == "rack prod-core01 U2"


def test_missing_leaf_lists_the_hcas_behind_it_in_the_same_finding(lab: Checked) -> None:
    (f,) = run(lab.index, without(lab.index, "leaf-su01-r0"))
    assert (f.rule, f.subject) == ("FAB-DEVICE-MISSING", "leaf-su01-r0")
    assert "rack lab-su01-net U2" in f.message
    assert "4 device(s) reachable only through it are unseen too: gpu01 mlx5_0, gpu02 mlx5_0" in f.message
    declared = [c for c in lab.inv.cables if "leaf-su01-r0" in (c.a.device, c.b.device)]
    assert len(f.details) == len(declared)
    assert any(d.startswith("leaf-su01-r0/1 - gpu01 mlx5_0/1 (rack lab-su01-r01 U2)") for d in f.details)


def test_missing_host_is_one_finding_per_host_not_per_port(lab: Checked) -> None:
    findings = run(lab.index, without(lab.index, "gpu03", "gpu06"))
    assert [(f.rule, f.subject) for f in findings] == [("FAB-DEVICE-MISSING", "gpu03"), ("FAB-DEVICE-MISSING", "gpu06")]
    f = findings[0]
    assert f.message == (
        "gpu03 (rack lab-su01-r01 U10) is not seen on the fabric: none of its 2 HCA ports answers (mlx5_0, mlx5_1)"
    )
    assert f.details == (
        "gpu03 mlx5_0/1 - leaf-su01-r0/3 (rack lab-su01-net U2): cable C-00005",
        "gpu03 mlx5_1/1 - leaf-su01-r1/3 (rack lab-su01-net U3): cable C-00006",
    )
    assert lab.inv.nodes[int(f.inventory[1])].name == "gpu03"


def test_a_host_with_one_hca_seen_keeps_per_cable_findings(lab: Checked) -> None:
    fab = from_index(lab.index)
    fab.remove("C-00005")
    (f,) = run(lab.index, fab)
    assert (f.rule, f.subject) == ("FAB-MISSING", "gpu03 mlx5_0/1 - leaf-su01-r0/3")


def test_missing_host_drops_the_hosts_own_echo_of_its_down_ports(lab: Checked) -> None:
    def ca(name: str, guid: str) -> str:
        return (
            f"CA '{name}'\n\tCA type: MT4123\n\tNumber of ports: 1\n\tFirmware version: 20.31.1014\n"
            f"\tHardware version: 0\n\tNode GUID: {guid}\n\tSystem image GUID: {guid}\n\tPort 1:\n"
            "\t\tState: Down\n\t\tPhysical state: Polling\n\t\tRate: 10\n\t\tBase lid: 0\n\t\tLMC: 0\n"
            "\t\tSM lid: 0\n\t\tCapability mask: 0x2651e848\n\t\tPort GUID: 0x0002c90300001111\n"
            "\t\tLink layer: InfiniBand\n"
        )

    ibstat = ca("mlx5_0", "0x0002c90300001110") + "\n" + ca("mlx5_1", "0x0002c90300002220")

    def rules(fab: SimFabric) -> list[tuple[str, str]]:
        obs = Observations(
            fabric={"ibnetdiscover": render(lab.index, fab)}, hosts={"gpu03": {"ibstat": ibstat}}, root=Path("s")
        )
        return [(f.rule, f.subject) for f in validate(lab.index, obs).findings]

    alone = rules(from_index(lab.index))  # the fabric sees gpu03: its ports' state is the host's finding
    assert ("HOST-PORT-STATE", "gpu03 mlx5_0/1") in alone and ("HOST-PORT-STATE", "gpu03 mlx5_1/1") in alone
    echoed = rules(without(lab.index, "gpu03"))
    assert ("FAB-DEVICE-MISSING", "gpu03") in echoed
    assert not [r for r in echoed if r[0] == "HOST-PORT-STATE"], echoed


# -- misplaced cables: swaps, rotations, crossed host cables -------------------------------------------


def test_rotation_of_three_uplinks_is_one_finding_with_the_label_at_each_port(lab: Checked) -> None:
    index = with_labels(lab, {"C-00020": "L20", "C-00021": "L21", "C-00022": "L22"})
    fab = from_index(index)
    a, b, c = fab.by_cable("C-00020"), fab.by_cable("C-00021"), fab.by_cable("C-00022")
    a.b, b.b, c.b = b.b, c.b, a.b  # leaf/21 -> spine01/2, leaf/22 -> spine02/1, leaf/23 -> spine01/1
    (f,) = run(index, fab)
    assert f.rule == "FAB-MISWIRED"
    assert f.message.startswith("3 cables are rotated on leaf-su01-r0 ports 21/22/23: ")
    # at leaf/21 sits the cable whose spine end is spine01/2: C-00021, labelled L21; it belongs on leaf/22
    assert f.details == (
        "at leaf-su01-r0/21: cable L21 (declared spine01/2 - leaf-su01-r0/22): move it to leaf-su01-r0/22",
        "at leaf-su01-r0/22: cable L22 (declared spine02/1 - leaf-su01-r0/23): move it to leaf-su01-r0/23",
        "at leaf-su01-r0/23: cable L20 (declared spine01/1 - leaf-su01-r0/21): move it to leaf-su01-r0/21",
    )
    assert "L21 from leaf-su01-r0/21 to leaf-su01-r0/22" in f.action
    assert f.floor == (
        "at leaf-su01-r0 in rack lab-su01-net U2; far ends spine01 in rack lab-core01 U3, spine02 in rack lab-core01 U4"
    )


def test_rotation_over_trunks_names_the_lane_groups_and_panels(prod: Checked) -> None:
    fab = from_index(prod.index)
    links = [fab.by_cable(f"leaf-su01-r0.{p}") for p in (21, 22, 23)]
    links[0].b, links[1].b, links[2].b = links[1].b, links[2].b, links[0].b
    (f,) = run(prod.index, fab)
    assert f.message.startswith("3 cables are rotated on leaf-su01-r0 ports 21/22/23")
    assert f.action.endswith(
        "the links ride trunk T-prod-core01-prod-su01-net-1 lane groups 1/2/0, patch panels prod-core01-pp01 "
        "(rack prod-core01 U42) / prod-su01-net-pp01 (rack prod-su01-net U42)"
    )


def test_crossed_cables_at_one_host_are_swapped_at_the_host(lab: Checked) -> None:
    fab = from_index(lab.index)
    fab.swap("C-00001", "C-00002")  # gpu01 mlx5_0 and mlx5_1 on each other's rail leaf
    (f,) = run(lab.index, fab)
    assert f.rule == "FAB-MISWIRED" and "gpu01 and gpu01" not in f.message
    assert f.message.startswith("the two cables of gpu01 mlx5_0 and mlx5_1 are crossed")
    assert "this crosses rails" in f.message
    assert f.action == (
        "swap the two cables at the host, gpu01 mlx5_0/1 and mlx5_1/1: C-00002 goes to gpu01 mlx5_1/1, "
        "C-00001 to gpu01 mlx5_0/1"
    )
    assert f.floor is not None and f.floor.startswith("at gpu01 in rack lab-su01-r01 U2;")


def test_swap_across_two_racks_gives_both_racks_and_units(lab: Checked) -> None:
    fab = from_index(lab.index)
    fab.swap("C-00001", "C-00009")  # gpu01 (leaf-su01-r0/1) and gpu05 (leaf-su02-r0/1)
    (f,) = run(lab.index, fab)
    assert f.rule == "FAB-MISWIRED"
    assert f.floor == (
        "at leaf-su01-r0 in rack lab-su01-net U2, leaf-su02-r0 in rack lab-su02-net U2; "
        "far ends gpu05 in rack lab-su02-r01 U2, gpu01 in rack lab-su01-r01 U2"
    )
    assert f.action.startswith("swap cables C-00009 and C-00001 at leaf-su01-r0/1 and leaf-su02-r0/1")


def test_swap_of_two_uplinks_between_spines_names_each_spine_and_its_unit(lab: Checked) -> None:
    fab = from_index(lab.index)
    fab.swap("C-00020", "C-00022")  # leaf-su01-r0/21 -> spine02/1 and leaf-su01-r0/23 -> spine01/1
    (f,) = run(lab.index, fab)
    assert "swapped on leaf-su01-r0 ports 21/23" in f.message
    assert "spine01 in rack lab-core01 U3" in (f.floor or "") and "spine02 in rack lab-core01 U4" in (f.floor or "")


def test_single_moved_cable_gives_every_place_involved(lab: Checked) -> None:
    fab = from_index(lab.index)
    fab.by_cable("C-00001").b = ("leaf-infra01", None, 30)
    (f,) = run(lab.index, fab)
    assert f.floor == (
        "gpu01 mlx5_0/1 in rack lab-su01-r01 U2; plugged into leaf-infra01/30 in rack lab-core01 U2; "
        "belongs in leaf-su01-r0/1 in rack lab-su01-net U2"
    )


# -- degraded links: speed and width get their own advice ----------------------------------------------


def test_speed_drop_gets_speed_advice_with_the_switch_lid(lab: Checked) -> None:
    fab = from_index(lab.index)
    fab.degrade("C-00020", width="4x", speed="EDR")
    (f,) = run(lab.index, fab)
    assert f.rule == "FAB-DEGRADED" and f.message.endswith("(lower speed)")
    assert "damaged lane" not in f.action and "rated speed" in f.action
    topo = ibnetdiscover.parse(render(lab.index, fab))
    lid = next(n.lid for n in topo.switches if n.name == "leaf-su01-r0")
    assert f"`ibportstate {lid} 21 query`" in f.action


def test_width_drop_gets_lane_advice(lab: Checked) -> None:
    fab = from_index(lab.index)
    fab.degrade("C-00007", width="1x")
    (f,) = run(lab.index, fab)
    assert f.message.endswith("(lower width)")
    assert f.action.startswith("reseat or replace cable C-00007") and "damaged lane" in f.action
    assert "rated speed" not in f.action


# -- missing links: advice by the kind of link, and the port state ---------------------------------------


def test_missing_switch_link_does_not_ask_about_a_host(prod: Checked) -> None:
    fab = from_index(prod.index)
    fab.remove("leaf-su01-r0.22")
    (f,) = run(prod.index, fab)
    assert f.rule == "FAB-MISSING" and "powered" not in f.action
    assert "both are switch ports" in f.action and "lane group 1" in f.action
    assert f.floor == (
        "leaf-su01-r0/22 in rack prod-su01-net U1 to spine02/1 in rack prod-core01 U2, via trunk "
        "T-prod-core01-prod-su01-net-1 lane group 1, patch panels prod-core01-pp01 (rack prod-core01 U42) / "
        "prod-su01-net-pp01 (rack prod-su01-net U42)"
    )


def test_missing_host_link_asks_about_the_host(lab: Checked) -> None:
    fab = from_index(lab.index)
    fab.remove("C-00010")
    (f,) = run(lab.index, fab)
    assert "is gpu05 powered and its HCA mlx5_1 up" in f.action


def _linkinfo(fab: SimFabric, switch: str, port: int, phys: str, lid: int) -> IblinkinfoReport:
    p = IblinkinfoPort(port, lid, None, None, None, None, "Down", phys, None, (), 1)
    return IblinkinfoReport((IblinkinfoNode("Switch", fab.guid[(switch, None)], switch, (p,)),), ())


@pytest.mark.parametrize("phys", ["Disabled", "Polling"])
def test_port_down_prints_ibportstate_with_the_real_lid_only_when_disabled(lab: Checked, phys: str) -> None:
    fab = from_index(lab.index)
    fab.remove("C-00005")
    topo = ibnetdiscover.parse(render(lab.index, fab))
    lid = next(n.lid for n in topo.switches if n.name == "leaf-su01-r0")
    assert lid is not None
    (f,) = diff_fabric(lab.index, topo, _linkinfo(fab, "leaf-su01-r0", 3, phys, lid))
    assert f.rule == "FAB-PORT-DOWN" and f.action.startswith("check cable C-00005")
    if phys == "Disabled":
        assert f"`ibportstate {lid} 3 enable`" in f.action
    else:
        assert "ibportstate" not in f.action and "no peer answers" in f.action


# -- duplicate node descriptions ----------------------------------------------------------------------


def test_duplicate_description_says_which_card_is_misnamed_and_where(lab: Checked) -> None:
    fab = from_index(lab.index)
    fab.desc[("gpu02", "mlx5_0")] = "gpu01 mlx5_0"  # gpu02's card carries gpu01's name
    (f,) = run(lab.index, fab)
    good, bad = fab.guid[("gpu01", "mlx5_0")], fab.guid[("gpu02", "mlx5_0")]
    assert f.rule == "FAB-DUP-DESC" and f.subject == "gpu01 mlx5_0"
    assert f"{good} on leaf-su01-r0 port 1 is gpu01 mlx5_0 (by its position)" in f.message
    assert f"{bad} on leaf-su01-r0 port 2 is gpu02 mlx5_0 (by its position), misnamed" in f.message
    assert f.action.startswith(
        f"set the node description of gpu02 mlx5_0 (GUID {bad}, rack lab-su01-r01 U6) to 'gpu02 mlx5_0'"
    )
    assert "gpu01 mlx5_0 (GUID" not in f.action


def test_duplicate_description_uses_guid_locks(lab: Checked, lab_copy: Path) -> None:
    fab = from_index(lab.index)
    source = lab_copy / "ibnetdiscover.txt"
    source.write_text(render(lab.index, fab))
    assert CliRunner().invoke(app, ["learn", str(lab_copy), "--from", str(source)]).exit_code == 0
    locked = load_checked(lab_copy)
    fab.desc[("gpu02", "mlx5_0")] = "gpu01 mlx5_0"
    (f,) = run(locked.index, fab)
    assert "is gpu01 mlx5_0 (by its locked GUID)" in f.message
    assert "is gpu02 mlx5_0 (by its locked GUID), misnamed" in f.message


# -- several faults at once, and the report formats ----------------------------------------------------


def test_combined_new_shapes_are_each_reported_once(lab: Checked) -> None:
    fab = without(lab.index, "spine02", "gpu06")
    a, b, c = fab.by_cable("C-00001"), fab.by_cable("C-00003"), fab.by_cable("C-00005")
    a.b, b.b, c.b = b.b, c.b, a.b  # three host cables rotated on leaf-su01-r0 ports 1/2/3
    fab.swap("C-00002", "C-00004")
    fab.degrade("C-00020", width="4x", speed="EDR")
    fab.desc[("gpu08", "mlx5_1")] = "gpu07 mlx5_1"
    findings = run(lab.index, fab)
    got = sorted((f.rule, f.subject) for f in findings)
    assert got == [
        ("FAB-DEGRADED", "leaf-su01-r0/21 - spine01/1"),
        ("FAB-DEVICE-MISSING", "gpu06"),
        ("FAB-DEVICE-MISSING", "spine02"),
        ("FAB-DUP-DESC", "gpu07 mlx5_1"),
        ("FAB-MISWIRED", "gpu02 mlx5_1/1 / gpu01 mlx5_1/1"),
        ("FAB-MISWIRED", "gpu03 mlx5_0/1 / gpu02 mlx5_0/1 / gpu01 mlx5_0/1"),
    ]


def test_json_and_junit_carry_the_details(lab: Checked, tmp_path: Path) -> None:
    saved = tmp_path / "saved"
    (saved / "fabric").mkdir(parents=True)
    (saved / "fabric" / "ibnetdiscover.txt").write_text(render(lab.index, without(lab.index, "spine02")))
    junit = tmp_path / "report.xml"
    env = str(ROOT / "inventories" / "lab")
    result = CliRunner().invoke(
        app, ["validate", env, "--from", str(saved), "--format", "json", "--junit", str(junit)]
    )
    assert result.exit_code == 4, result.output
    data = json.loads(result.stdout)
    (f,) = [f for f in data["findings"] if f["rule"].startswith("FAB-")]  # hosts' data is not saved here
    assert f["rule"] == "FAB-DEVICE-MISSING" and f["floor"] == "rack lab-core01 U4"
    declared = [c for c in lab.inv.cables if "spine02" in (c.a.device, c.b.device)]
    assert len(f["details"]) == len(declared) and f["details"][0].startswith("spine02/1 - leaf-su01-r0/23")
    assert f["where"] is not None and re.search(r"fabric\.yaml:\d+:\d+$", f["where"])
    xml = junit.read_text()
    assert '<testsuite name="fabric" tests="1" failures="1">' in xml
    assert "spine02/1 - leaf-su01-r0/23" in xml and "where: rack lab-core01 U4" in xml
    # the ids, as JSON has them: the testcase's properties and the failure's text
    assert f["switch"] == "spine02" and '<property name="switch" value="spine02" />' in xml
    assert "switch: spine02\n" in xml
    text = CliRunner().invoke(app, ["validate", env, "--from", str(saved)])
    assert text.exit_code == 4 and "· spine02/1 - leaf-su01-r0/23" in text.output


def test_duplicate_switch_description_names_the_slot_of_each(lab: Checked) -> None:
    fab = from_index(lab.index)
    fab.desc[("spine02", None)] = "spine01"  # switches are not bound by position: both stay unbound
    (f,) = run(lab.index, fab)
    s1, s2 = fab.guid[("spine01", None)], fab.guid[("spine02", None)]
    assert (f.rule, f.severity) == ("FAB-DUP-DESC", "error")  # their links could not be checked
    assert f"{s1} on leaf-infra01 ports 21/22, leaf-su01-r0 ports 21/22 and 6 more port(s) is spine01" in f.message
    assert f"{s2} on leaf-infra01 ports 23/24, leaf-su01-r0 ports 23/24 and 6 more port(s) is spine02" in f.message
    assert "is spine02 (by the declared cables on its ports), misnamed" in f.message
    assert "spine01 (GUID" not in f.action
    assert f.action.startswith(f"set the node description of spine02 (GUID {s2}, rack lab-core01 U4) to 'spine02'")


def test_host_down_is_one_finding_unreachable_with_its_place_and_links(lab: Checked) -> None:
    obs = Observations(
        fabric={"ibnetdiscover": render(lab.index, without(lab.index, "gpu03"))},
        unreachable={"gpu03": "ssh: connect to host gpu03 port 22: No route to host"},
        root=Path("s"),
    )
    report = validate(lab.index, obs, fabric_only=True)
    about = [f for f in report.findings if "gpu03" in f.subject]
    assert [f.rule for f in about] == ["HOST-UNREACHABLE"]  # not also FAB-DEVICE-MISSING
    (f,) = about
    assert f.message == (
        "gpu03 could not be reached: ssh: connect to host gpu03 port 22: No route to host; nor is it seen on "
        "the fabric (rack lab-su01-r01 U10, 2 HCA link(s)): it is down (power, or hung)"
    )
    assert f.action.startswith("go to gpu03 in rack lab-su01-r01 U10: is it powered")
    assert len(f.details) == 2 and lab.inv.nodes[int(f.inventory[1])].name == "gpu03"
    assert report.unreachable == 1


def test_unknown_switch_in_the_place_of_a_leaf_is_one_finding_naming_the_leaf(lab: Checked) -> None:
    fab = from_index(lab.index)
    leaf = [lk for lk in fab.links if "leaf-su01-r0" in (lk.a[0], lk.b[0])]
    fab.links = [lk for lk in fab.links if lk not in leaf]
    fab.guid[("mystery", None)] = MYSTERY
    fab.desc[("mystery", None)] = "MT4123 Quantum Mellanox Technologies"
    for lk in leaf:
        mine, other = (lk.a, lk.b) if lk.a[0] == "leaf-su01-r0" else (lk.b, lk.a)
        fab.links.append(SimLink(("mystery", None, mine[2]), other, "4x", "HDR", lk.cable))
    (f,) = run(lab.index, fab)  # no missing leaf, no four missing host links
    assert f.message.endswith(
        "plugged into gpu01 port mlx5_0/1, gpu02 port mlx5_0/1, gpu03 port mlx5_0/1 and 5 more port(s), "
        f"where leaf-su01-r0 is declared ({len(leaf)} of its cables reach it)"
    )
    assert len(f.details) == len(leaf)
