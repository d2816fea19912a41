"""ibstat, ibstat -p, ibstatus."""

from __future__ import annotations

import pytest
from _parse_helpers import fixture, raises_at

from clusterforge.parse import ibstat, ibstat_p, ibstatus


def test_tab_indented_two_cas_four_ports() -> None:
    cas = ibstat.parse(fixture("ibstat/cn-tutorial-2x-cx3-fdr-dualport-tabs"))
    assert [c.ca for c in cas] == ["mlx4_0", "mlx4_1"]
    assert sum(len(c.ports) for c in cas) == 4
    assert {p.rate for c in cas for p in c.ports} == {56}
    assert [p.sm_lid for c in cas for p in c.ports] == [9, 9, 7, 7]
    assert cas[1].ports[1].port_guid == "0xf45214030033b852"


def test_space_indented_and_polling_port() -> None:
    (ca,) = ibstat.parse(fixture("ibstat/archwiki-mt25418-ddr-dualport-polling"))
    assert ca.ca_type == "MT25418" and ca.hardware_version == "a0"
    assert [(p.state, p.physical_state, p.rate) for p in ca.ports] == [
        ("Active", "LinkUp", 20), ("Down", "Polling", 10)]


def test_flat_ca_port_layout() -> None:
    (ca,) = ibstat.parse(fixture("ibstat/cn-tutorial-cx3-fdr-ca-port-arg-flat"))
    assert ca.ca == "mlx4_0" and ca.num_ports is None
    assert [p.port for p in ca.ports] == [2]
    assert ca.ports[0].base_lid == 12


def test_empty_ca_type_and_firmware_are_none() -> None:
    (ca,) = ibstat.parse(fixture("ibstat/opa-ff-issue4-intel-omnipath-hfi1-empty-catype"))
    assert ca.ca == "hfi1_0" and ca.ca_type is None and ca.firmware is None
    (ca,) = ibstat.parse(fixture("ibstat/mesa-talos-cx4-initializing-no-catype"))
    assert ca.ca_type is None and ca.ports[0].state == "Initializing"
    assert ca.ports[0].base_lid == 65535


def test_ethernet_and_bond_names() -> None:
    cas = ibstat.parse(fixture("ibstat/gpud-h100-400g-ib-bond0-200g-eth"))
    bond = cas[-1]
    assert bond.ca == "mlx5_bond_0" and bond.ca_type == "MT41692"
    assert bond.ports[0].link_layer == "Ethernet" and bond.ports[0].rate == 200
    assert [c.ca for c in cas if c.ports[0].link_layer == "InfiniBand"] == [
        "mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]


def test_down_disabled_ports() -> None:
    cas = ibstat.parse(fixture("ibstat/gpud-h100-some-down-disabled"))
    down = [(c.ca, c.ports[0].rate) for c in cas if c.ports[0].state == "Down"]
    assert len(down) == 3 and all(r == 40 for _, r in down)


def test_ibpanic_midway_is_a_parse_error() -> None:
    err = raises_at(ibstat.parse, fixture("ibstat/gpud-a100-8x200-ibpanic-mlx5_8"), 137)
    assert "mlx5_8" in err.message and err.tool == "ibstat"


GOOD = (
    "CA 'mlx5_0'\n\tCA type: MT4123\n\tNumber of ports: 1\n\tFirmware version: 20.1\n"
    "\tHardware version: 0\n\tNode GUID: 0xb8cef60300025b90\n"
    "\tSystem image GUID: 0xb8cef60300025b90\n\tPort 1:\n\t\tState: Active\n"
    "\t\tPhysical state: LinkUp\n\t\tRate: {rate}\n\t\tBase lid: 17\n\t\tLMC: 0\n"
    "\t\tSM lid: 1\n\t\tCapability mask: 0x2651e848\n\t\tPort GUID: 0xb8cef60300025b90\n"
    "\t\tLink layer: InfiniBand\n"
)


def test_rate_forms() -> None:
    assert ibstat.parse(GOOD.format(rate="2.5"))[0].ports[0].rate == 2.5
    port = ibstat.parse(GOOD.format(rate="40 (FDR10)"))[0].ports[0]
    assert port.rate == 40 and port.fdr10


@pytest.mark.parametrize("cut", [9, 12, 16])
def test_truncated_port_block_raises(cut: int) -> None:
    text = "\n".join(GOOD.format(rate="200").split("\n")[:cut]) + "\n"
    raises_at(ibstat.parse, text)


def test_port_count_mismatch_raises() -> None:
    text = GOOD.format(rate="200").replace("Number of ports: 1", "Number of ports: 2")
    raises_at(ibstat.parse, text, 1)


def test_garbage_lines_raise() -> None:
    raises_at(ibstat.parse, "hello world\n", 1)
    raises_at(ibstat.parse, GOOD.format(rate="200") + "xyz\n", 18)
    raises_at(ibstat.parse, GOOD.format(rate="200").replace("Rate: 200", "Rate: fast"))
    raises_at(ibstat.parse, GOOD.format(rate="200").replace("0x2651e848", "zz"))
    raises_at(ibstat.parse, GOOD.format(rate="200").replace("InfiniBand", "Infini"))


def test_port_field_before_port_header() -> None:
    err = raises_at(ibstat.parse, "CA 'mlx5_0'\n\tState: Active\n", 2)
    assert "Port N:" in err.message


def test_switch_lists_port_zero() -> None:
    port = "\tPort {n}:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 100\n" \
           "\t\tBase lid: 3\n\t\tLMC: 0\n\t\tSM lid: 1\n\t\tCapability mask: 0x0\n" \
           "\t\tPort GUID: 0x1\n\t\tLink layer: InfiniBand\n"
    text = ("Switch 'sw0'\n\tSwitch type: MT53000\n\tNumber of ports: 1\n"
            "\tFirmware version: 1\n\tHardware version: 0\n\tNode GUID: 0x1\n"
            "\tSystem image GUID: 0x1\n" + port.format(n=0) + port.format(n=1))
    (sw,) = ibstat.parse(text)
    assert sw.node_type == "Switch" and sw.ca_type == "MT53000"
    assert [p.port for p in sw.ports] == [0, 1]


def test_ibstat_p() -> None:
    guids = ibstat_p.parse(fixture("ibstat-p/cn-tutorial-2x-cx3-fdr-4-port-guids"))
    assert guids == ("0xec0d9a03000c8981", "0xec0d9a03000c8982",
                     "0xf45214030033b851", "0xf45214030033b852")
    assert ibstat_p.parse("0x00000000000ABCDE\n") == ("0x00000000000abcde",)
    raises_at(ibstat_p.parse, "0xec0d9a03000c8981\nmlx5_0\n", 2)
    raises_at(ibstat_p.parse, "0xec0d9a03000c8981\n0xec0d9a03000c89\n", 2)  # cut line
    raises_at(ibstat_p.parse, "0x00000000000000001\n", 1)


def test_ibstatus_hex_lids_and_rates() -> None:
    (port,) = ibstatus.parse(fixture("ibstatus/ustclug-cx7-4x-hdr-200"))
    assert (port.base_lid, port.sm_lid) == (48, 48)
    assert (port.rate_gbps, port.width, port.speed) == (200.0, "4X", "HDR")
    ports = ibstatus.parse(fixture("ibstatus/madsys-cx3-qdr-port2-eth-disabled"))
    assert [(p.port, p.state, p.physical_state, p.link_layer) for p in ports] == [
        (1, "ACTIVE", "LinkUp", "InfiniBand"), (2, "DOWN", "Disabled", "Ethernet")]
    ports = ibstatus.parse(fixture("ibstatus/gpud-a100-hdr-8x200"))
    assert len(ports) == 9 and ports[-1].default_gid is None and ports[0].base_lid == 0x33BF


def test_ibstatus_truncated_block_raises() -> None:
    text = fixture("ibstatus/ustclug-cx7-4x-hdr-200")
    raises_at(ibstatus.parse, "\n".join(text.split("\n")[:5]))
    raises_at(ibstatus.parse, text.replace("4: ACTIVE", "ACTIVE"), 5)


def test_short_format_and_truncated_last_ca() -> None:
    head = GOOD.format(rate="200").split("\tPort 1:")[0]
    (ca,) = ibstat.parse(head)  # ibstat -s: CA fields only
    assert ca.ports == () and ca.num_ports == 1
    two = GOOD.format(rate="200") + head.replace("mlx5_0", "mlx5_1")
    raises_at(ibstat.parse, two)
