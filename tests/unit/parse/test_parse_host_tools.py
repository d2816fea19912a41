"""ibdev2netdev, lnetctl net show, lctl list_nids."""

from __future__ import annotations

from _parse_helpers import fixture, raises_at

from clusterforge.parse import ibdev2netdev, lctl_list_nids, lnetctl_net_show


def test_ibdev2netdev() -> None:
    entries = ibdev2netdev.parse(fixture("ibdev2netdev/linpack-mlx4-dualport-eth"))
    assert [(e.device, e.port, e.netdev, e.state) for e in entries] == [
        ("mlx4_0", 1, "eth6", "Up"), ("mlx4_0", 2, "eth7", "Down")]
    (v,) = ibdev2netdev.parse(
        "0000:3b:00.0 mlx5_0 (MT4123 - MCX653105A-HDAT) ConnectX-6 VPI adapter card "
        "fw 20.28.1002 port 1 (ACTIVE) ==> ib0 (Up)\n")
    assert (v.pci_address, v.device, v.port_state, v.netdev) == (
        "0000:3b:00.0", "mlx5_0", "ACTIVE", "ib0")
    raises_at(ibdev2netdev.parse, "mlx5_0 port 1 ==> ib0 (Up)\nmlx5_1 port\n", 2)


def test_lnetctl_error_form_is_no_nis() -> None:
    r = lnetctl_net_show.parse(fixture("lnetctl-net-show/whamcloud-network-down-error"))
    assert r.nets == ()
    assert r.error is not None and r.error.errno == -100
    assert r.error.descr == "cannot get networks: Network is down"


def test_lnetctl_nis() -> None:
    r = lnetctl_net_show.parse(fixture("lnetctl-net-show/whamcloud-o2ib-2ni-verbose"))
    assert r.error is None and [n.net_type for n in r.nets] == ["lo", "o2ib"]
    o2ib = r.nets[1]
    assert [(ni.nid, ni.status, ni.interfaces) for ni in o2ib.nis] == [
        ("172.16.0.24@o2ib", "up", ("ib0",)), ("172.16.0.28@o2ib", "up", ("ib1",))]
    assert o2ib.nis[0].tunables["peer_credits"] == 32
    assert o2ib.nis[0].health["health value"] == 1000
    assert o2ib.nis[0].lnd_tunables == {} and o2ib.nis[0].extra["dev cpt"] == -1
    r = lnetctl_net_show.parse(fixture("lnetctl-net-show/whamcloud-tcp-verbose-tcpbonding"))
    tcp = r.nets[1].nis[0]
    assert tcp.statistics == {"send_count": 3825, "recv_count": 3736, "drop_count": 30}
    assert tcp.extra["tcp bonding"] == 0 and tcp.extra["CPT"] == "[0]"
    r = lnetctl_net_show.parse(fixture("lnetctl-net-show/whamcloud-tcp-mlxen0-2ni-fixture"))
    assert [ni.interfaces for ni in r.nets[1].nis] == [("mlxen0",), ("mlxen1",)]
    assert r.nets[1].nis[0].lnd_tunables == {"conns_per_peer": 3}


def test_lnetctl_plain_and_errors() -> None:
    r = lnetctl_net_show.parse("net:\n    - net type: o2ib\n      local NI(s):\n"
                               "        - nid: 10.0.0.1@o2ib\n          status: up\n"
                               "          interfaces:\n              0: ib0\n")
    assert r.nets[0].nis[0].interfaces == ("ib0",) and r.nets[0].nis[0].statistics == {}
    raises_at(lnetctl_net_show.parse, "net: [\n")
    raises_at(lnetctl_net_show.parse, "hello\n", 1)
    raises_at(lnetctl_net_show.parse, "net:\n  - local NI(s): []\n")
    raises_at(lnetctl_net_show.parse, "a: &x [1]\nb: *x\n", 2)


def test_lctl_list_nids() -> None:
    (nid,) = lctl_list_nids.parse(fixture("lctl-list_nids/csdn-ddn-es-lustre-client-o2ib"))
    assert (nid.address, nid.net, nid.lnd, nid.net_num) == ("11.11.11.161", "o2ib", "o2ib", 0)
    nids = lctl_list_nids.parse("0@lo\n10.0.0.2@o2ib1\n192.168.1.1@tcp\n")
    assert [(n.lnd, n.net_num) for n in nids] == [("lo", 0), ("o2ib", 1), ("tcp", 0)]
    raises_at(lctl_list_nids.parse, "10.0.0.1@o2ib\nopening /dev/lnet failed\n", 2)
