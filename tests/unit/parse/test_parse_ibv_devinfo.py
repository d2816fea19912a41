"""ibv_devinfo: real captures, the old `Device ports:` layout, -v continuation lines, truncation."""

from __future__ import annotations

from _parse_helpers import fixture, raises_at

from clusterforge.parse import ibv_devinfo

F = "ibv_devinfo/"


def test_active_ib_port() -> None:
    (dev,) = ibv_devinfo.parse(fixture(F + "ustclug-cx7-ib-active"))
    assert (dev.hca_id, dev.fw_ver, dev.vendor_part_id, dev.node_guid) == (
        "mlx5_0", "28.40.1000", 4129, "0xc470bd0300cf4964")
    (port,) = dev.ports
    assert (port.state, port.state_code, port.port_lid, port.sm_lid, port.link_layer) == (
        "PORT_ACTIVE", 4, 48, 48, "InfiniBand")


def test_four_ethernet_functions_with_mixed_firmware() -> None:
    devs = ibv_devinfo.parse(fixture(F + "stelline-asus-4xcx7-eth-down"))
    assert [d.hca_id for d in devs] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert {d.fw_ver for d in devs} == {"28.41.1000", "28.43.2566"}
    assert all(p.link_layer == "Ethernet" and p.state == "PORT_DOWN" for d in devs for p in d.ports)
    assert devs[0].ports[0].active_mtu == 1024 and devs[2].ports[0].active_mtu == 4096


OLD = """hca_id:\tmlx4_0
\ttransport:\t\t\tInfiniBand (0)
\tfw_ver:\t\t\t\t2.9.1000
\tnode_guid:\t\t\t0002:c903:0010:a0b4
\tsys_image_guid:\t\t\t0002:c903:0010:a0b7
\tvendor_id:\t\t\t0x02c9
\tvendor_part_id:\t\t\t26428
\thw_ver:\t\t\t\t0xB0
\tboard_id:\t\t\tMT_0D90110009
\tphys_port_cnt:\t\t\t2
\tmax_mr_size:\t\t\t0xffffffffffffffff
\tdevice_cap_flags:\t\t0x006c9c76
\t\t\t\t\tBAD_PKEY_CNTR
\t\t\t\t\tBAD_QKEY_CNTR
\t\tDevice ports:
\t\tport:\t1
\t\t\tstate:\t\t\tPORT_ACTIVE (4)
\t\t\tmax_mtu:\t\t4096 (5)
\t\t\tactive_mtu:\t\t4096 (5)
\t\t\tsm_lid:\t\t\t3
\t\t\tport_lid:\t\t3
\t\t\tport_lmc:\t\t0x00
\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0002:c903:0010:a0b5

\t\tport:\t2
\t\t\tstate:\t\t\tPORT_DOWN (1)
\t\t\tmax_mtu:\t\t4096 (5)
\t\t\tactive_mtu:\t\t4096 (5)
\t\t\tsm_lid:\t\t\t0
\t\t\tport_lid:\t\t0
\t\t\tport_lmc:\t\t0x00
"""


def test_old_layout_with_device_ports_line_and_verbose_fields() -> None:
    (dev,) = ibv_devinfo.parse(OLD)
    assert dev.phys_port_cnt == 2 and [p.port for p in dev.ports] == [1, 2]
    assert dev.extra["device_cap_flags"] == "0x006c9c76 BAD_PKEY_CNTR BAD_QKEY_CNTR"
    assert dev.ports[0].extra == {"GID[  0]": "fe80:0000:0000:0000:0002:c903:0010:a0b5"}
    assert dev.ports[1].link_layer is None and dev.hw_ver == "0xB0"


def test_no_devices_is_an_empty_result() -> None:
    assert ibv_devinfo.parse("No IB devices found\n") == ()


def test_a_port_block_cut_short_is_an_error() -> None:
    text = fixture(F + "ustclug-cx7-ib-active")
    cut = text[: text.index("sm_lid")]
    err = raises_at(ibv_devinfo.parse, cut)
    assert "port 1 is missing sm_lid, port_lid, port_lmc" in err.message


def test_fewer_port_blocks_than_phys_port_cnt_is_an_error() -> None:
    text = OLD[: OLD.index("\n\t\tport:\t2")] + "\n"
    err = raises_at(ibv_devinfo.parse, text)
    assert "phys_port_cnt is 2 but 1 port block(s) follow" in err.message


def test_bad_guid_and_garbage_name_their_line() -> None:
    bad = OLD.replace("0002:c903:0010:a0b4", "0002:c903:a0b4")
    err = raises_at(ibv_devinfo.parse, bad, 4)
    assert "node_guid" in err.message
    raises_at(ibv_devinfo.parse, "garbage\n", 1)
    raises_at(ibv_devinfo.parse, "", 1)
