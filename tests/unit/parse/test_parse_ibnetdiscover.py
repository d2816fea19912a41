"""ibnetdiscover (plain + ibdiagnet copy), ibnetdiscover -p, iblinkinfo."""

from __future__ import annotations

import pytest
from _parse_helpers import fixture, raises_at
from _parse_synth import synth_ibnetdiscover

from clusterforge.parse import ParseError, iblinkinfo, ibnetdiscover, ibnetdiscover_ports

TOPOGRAPH = "ibnetdiscover/topograph-dgx-h100-superpod-ndr-40sw-582ca"
PSMN = "ibnetdiscover/psmn-x5-qdr-11switch-89ca"
SEQUOIA = "ibnetdiscover/sequoia-ndr-9sw-263ca-full.ibdiagnet2.ibnetdiscover"


def test_superpod_counts_and_sharp_aggregation_nodes() -> None:
    topo = ibnetdiscover.parse(fixture(TOPOGRAPH))
    assert (len(topo.switches), len(topo.cas), len(topo.links)) == (40, 582, 1114)
    assert {(lk.width, lk.speed) for lk in topo.links} == {("4x", "NDR")}
    sharp = [c for c in topo.cas if c.name == "Mellanox Technologies Aggregation Node"]
    assert len(sharp) == 40 and {c.devid for c in sharp} == {0xCF09}
    agg = next(lk for lk in topo.links if lk.b.guid == "0x2c5eab0300b87b50")
    assert (agg.a.guid, agg.a.port, agg.a.kind) == ("0x2c5eab0300b87b40", 65, "switch")
    assert (agg.b.port, agg.b.lid, agg.b.port_guid) == (1, 193, "0x2c5eab0300b87b50")
    # aggregation node shares the switch's system image GUID
    assert sharp[0].sysimgguid == topo.switches[0].sysimgguid == "0x2c5eab0300b87b40"
    unnamed = [c for c in topo.cas if c.name == "MT4129 ConnectX7   Mellanox Technologies"]
    assert len(unnamed) == 69


def test_every_link_end_has_guid_port_name() -> None:
    topo = ibnetdiscover.parse(fixture(TOPOGRAPH))
    names = {n.guid: n.name for n in (*topo.switches, *topo.cas)}
    seen = set()
    for lk in topo.links:
        for end in (lk.a, lk.b):
            assert end.guid.startswith("0x") and len(end.guid) == 18
            assert end.port >= 1 and end.name == names[end.guid]
        key = frozenset({(lk.a.guid, lk.a.port), (lk.b.guid, lk.b.port)})
        assert key not in seen
        seen.add(key)


def test_hash_in_descriptions_and_guid_normalisation() -> None:
    topo = ibnetdiscover.parse(fixture(PSMN))
    assert (len(topo.switches), len(topo.cas), len(topo.links)) == (11, 89, 159)
    names = {s.name for s in topo.switches}
    assert {"Voltaire 4036 # 4036-8C5C", "Voltaire 4036 # hoibp0013"} <= names
    first = topo.switches[0]
    assert first.sysimgguid == "0x0008f10500200b51" and first.port0 == "enhanced"
    assert [s.port0 for s in topo.switches].count("base") == 2
    speeds = {(lk.width, lk.speed) for lk in topo.links}
    assert speeds == {("4x", "QDR"), ("4x", "DDR")}
    ca_end = next(lk.b for lk in topo.links if lk.b.kind == "ca")
    assert ca_end.port_guid is not None and len(ca_end.port_guid) == 18


def test_ibdiagnet_labels() -> None:
    topo = ibnetdiscover.parse(fixture(SEQUOIA))
    assert (len(topo.switches), len(topo.cas), len(topo.links)) == (9, 263, 271)
    first = topo.links[0]
    assert (first.a.label, first.b.label) == ("1/1/1", "1/32/1")
    pci = next(lk.b for lk in topo.links if lk.b.label and lk.b.label.startswith("B"))
    assert pci.kind == "ca" and pci.port_guid == pci.guid


def test_isolated_single_ca() -> None:
    topo = ibnetdiscover.parse(fixture("ibnetdiscover/topograph-gb200-isolated-single-ca"))
    assert topo.switches == () and topo.links == ()
    assert [(c.guid, c.name, c.devid) for c in topo.cas] == [
        ("0xb8e92403009ca838", "dgx-gb200-n01-c1 HCA-1", 0x1021)]


def test_blank_lines_stripped_and_crlf() -> None:
    text = fixture(PSMN)
    stripped = "\n".join(ln for ln in text.split("\n") if ln.strip())
    assert ibnetdiscover.to_json(ibnetdiscover.parse(stripped)) == ibnetdiscover.to_json(
        ibnetdiscover.parse(text))
    crlf = ibnetdiscover.parse(text.replace("\n", "\r\n"))
    assert len(crlf.links) == 159


def test_synthetic_fabric() -> None:
    topo = ibnetdiscover.parse(synth_ibnetdiscover(leaves=4, hosts_per_leaf=3, spines=2))
    assert (len(topo.switches), len(topo.cas), len(topo.links)) == (6, 12, 20)
    assert all(lk.speed == "NDR" for lk in topo.links)
    assert any("#" in s.name for s in topo.switches)


def test_every_truncation_of_a_small_fabric_raises() -> None:
    lines = synth_ibnetdiscover(leaves=2, hosts_per_leaf=2, spines=1).split("\n")
    last = max(i for i, ln in enumerate(lines) if ln.strip())
    for keep in range(1, last + 1):
        dropped = [ln for ln in lines[keep:] if ln.strip() and not ln.startswith("#")]
        if not dropped:
            continue
        with pytest.raises(ParseError):
            ibnetdiscover.parse("\n".join(lines[:keep]))


def test_one_sided_link_and_missing_node_raise() -> None:
    text = fixture("ibnetdiscover/topograph-gb200-isolated-single-ca")
    dangling = text + (
        '[1](b8e92403009ca838) \t"S-0000000000000001"[3]\t\t# lid 1 lmc 0 "sw" lid 2 4xNDR\n')
    err = raises_at(ibnetdiscover.parse, dangling)
    assert "no record" in err.message
    sw = '\nswitchguid=0x1(1)\nSwitch\t36 "S-0000000000000001"\t\t# "sw" base port 0 lid 2 lmc 0\n'
    err = raises_at(ibnetdiscover.parse, dangling + sw)
    assert "one end only" in err.message


def test_ca_to_ca_router_and_full_info_forms() -> None:
    text = (
        'caguid=0xa\nCa\t1 "H-000000000000000a"\t\t# "host a mlx5_0"\n'
        '[1](a) \t"H-000000000000000b"[1] (b) \t\t# lid 1 lmc 0 "host b" lid 2 4xHDR s=4 w=2 v=4\n'
        '\nrtguid=0xb\nRt\t1 "R-000000000000000b"\t\t# "host b"\n'
    )
    raises_at(ibnetdiscover.parse, text)  # b is called a CA ("H-") but its record is a router
    ok = text.replace('"H-000000000000000b"', '"R-000000000000000b"') + (
        '[1](b) \t"H-000000000000000a"[1] (a) \t\t# lid 2 lmc 0 "host a mlx5_0" lid 1 4xHDR\n')
    topo = ibnetdiscover.parse(ok)
    assert len(topo.routers) == 1 and len(topo.links) == 1
    lk = topo.links[0]
    assert (lk.a.lid, lk.b.lid, lk.b.kind, lk.width, lk.speed) == (1, 2, "router", "4x", "HDR")


def test_lone_node_without_links() -> None:
    sw = 'switchguid=0x1(1)\nSwitch\t36 "S-0000000000000001"\t\t# "sw" base port 0 lid 2 lmc 0\n'
    assert len(ibnetdiscover.parse(sw).switches) == 1
    other = "# Initiated from node 0000000000000002 port 0000000000000002\n"
    assert "no links" in raises_at(ibnetdiscover.parse, other + sw, 3).message


def test_garbage_and_mismatched_ids_raise() -> None:
    raises_at(ibnetdiscover.parse, "hello\n", 1)
    raises_at(ibnetdiscover.parse, "# only comments\n#\n")
    bad_id = 'caguid=0xc\nCa\t1 "H-000000000000000a"\t\t# "x"\n'
    assert "does not match" in raises_at(ibnetdiscover.parse, bad_id, 2).message
    raises_at(ibnetdiscover.parse, '[1]\t"S-01"[2]\t\t# "x" lid 1 4xHDR\n', 1)


def test_ports_report_excerpts() -> None:
    rep = ibnetdiscover_ports.parse(fixture("ibnetdiscover-p/treydock-edr-osc-excerpt"))
    assert len(rep.ports) == 9 and len(rep.links) == 4
    lone = [p for p in rep.ports if p.peer is None]
    assert [(p.guid, p.port, p.speed) for p in lone] == [
        ("0x506b4b03005c2740", 37, "???"), ("0x08c0eb0300add20e", 80, "SDR")]
    rep = ibnetdiscover_ports.parse(
        fixture("ibnetdiscover-p/treydock-hdr-sharp-edgecases-excerpt"))
    assert rep.ports[0].name == "Mellanox Technologies Aggregation Node"
    assert rep.ports[0].peer is not None and rep.ports[0].peer.name == "5FB0405-leaf-IB01 "
    assert rep.ports[3].name == " 5FB0406-spine-IB02 "
    raises_at(ibnetdiscover_ports.parse, "CA 134 1 0x7c 4x EDR - SW 1719\n", 1)


def test_iblinkinfo_sharp_fabric() -> None:
    rep = iblinkinfo.parse(fixture("iblinkinfo/sharp-blog-hdr-quantum-21node"))
    switches = [n for n in rep.nodes if n.type == "Switch"]
    assert len(rep.nodes) == 23 and len(switches) == 1
    sw = switches[0]
    assert sw.guid == "0x0c42a103008982a4" and len(sw.ports) == 41
    assert sum(p.state == "Down" for p in sw.ports) == 19
    down = sw.ports[4]
    assert (down.peer, down.width, down.speed, down.physical_state) == (None, None, None, "Polling")
    p41 = sw.ports[40]
    assert p41.peer is not None and p41.peer.name == "Mellanox Technologies Aggregation Node"
    assert (p41.width, p41.speed, p41.speed_gbps) == ("4x", "HDR", 53.125)
    assert len(rep.links) == 22
    assert rep.nodes[-1].name == "cu02 HCA-1"  # local CA printed last


def test_iblinkinfo_hints_and_port_not_available() -> None:
    text = (
        "CA: host mlx4_0:\n"
        "      0x0002c90300002779      4    1[  ] ==( 4X      10.0 Gbps Active/  LinkUp)==>"
        '       3    1[  ] "sw" ( Could be 14.0625 Gbps)\n'
        "      0x0002c9030000277a      5    2[  ] ==( 4X      10.0 Gbps (FDR10) Active/  LinkUp)"
        '==>    "Port not available"\n'
    )
    (node,) = iblinkinfo.parse(text).nodes
    assert node.ports[0].hints == ("14.0625 Gbps",) and node.ports[0].speed == "QDR"
    assert node.ports[1].peer is None and node.ports[1].speed == "FDR10"
    raises_at(iblinkinfo.parse, "CA: x:\n", 1)
    raises_at(iblinkinfo.parse, text.replace("Active/", "Active"), 2)


def test_iblinkinfo_back_to_back_and_truncated_switch() -> None:
    rep = iblinkinfo.parse(fixture("iblinkinfo/archwiki-back-to-back-ddr-no-switch"))
    assert len(rep.links) == 1 and rep.links[0].speed == "DDR"
    rep = iblinkinfo.parse(fixture("iblinkinfo/linpack-edr-msb7700-3node"))
    assert [len(n.ports) for n in rep.nodes] == [1, 1, 18]
    assert rep.nodes[2].name == "MF0;SB7700:MSB7700/U1"


def test_gc_state_is_restored() -> None:
    import gc

    assert gc.isenabled()
    ibnetdiscover.parse(fixture(PSMN))
    assert gc.isenabled()
    raises_at(ibnetdiscover.parse, "garbage\n", 1)
    assert gc.isenabled()
    gc.disable()
    try:
        ibnetdiscover.parse(fixture(PSMN))
        assert not gc.isenabled()
    finally:
        gc.enable()
