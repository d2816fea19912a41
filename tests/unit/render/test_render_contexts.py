"""Targeted tests of the context builders, on variants of the lab inventory."""

from __future__ import annotations

import json
import re
from typing import Any

import jinja2
import pytest
from _render_common import ROOT, index_of, lab_data, lab_index

from clusterforge.api import load_checked
from clusterforge.render import context_diagram as diagram_mod
from clusterforge.render import render, render_environment
from clusterforge.render.context_ibsim import link_mode, net_context
from clusterforge.render.env import environment
from clusterforge.render.fabric import FabricView
from clusterforge.util.csvtext import csv_cell
from clusterforge.util.systemd_unit import escape_path

COMMENT = {".csv": None, ".dot": "//"}


def _node(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(n for n in data["nodes"] if n["name"] == name)


def test_banner_everywhere_and_no_timestamp() -> None:
    for rel, text in render_environment(lab_index(), "lab").items():
        if rel.endswith(".json"):  # JSON has no comments (the drain hook's host -> argv targets)
            assert isinstance(json.loads(text), dict) and text.endswith("\n"), rel
            continue
        marker = "#" if rel.startswith("monitoring/") else COMMENT.get(rel[rel.rfind("."):], "#")
        if marker is None:
            assert text.startswith("cable_id,"), rel
            continue
        if text.startswith("#!"):  # a script: the banner right after its interpreter line
            text = text.split("\n", 1)[1]
        assert text.startswith(f"{marker} Managed by clusterforge for environment lab."), rel
        assert not re.search(r"\d{4}-\d{2}-\d{2}|\d\d:\d\d:\d\d", text), rel
        assert text.endswith("\n") and not text.endswith("\n\n\n"), rel


def test_nccl_rail_order_and_exact_names() -> None:
    data = lab_data()
    _node(data, "gpu01")["hcas"] = [
        {"name": "mlx5_10", "model": "ConnectX-6", "rail": 2, "ports": [{"port": 1, "rate": "HDR"}]},
        {"name": "mlx5_1", "model": "ConnectX-6", "rail": 1, "ports": [{"port": 1, "rate": "HDR"}]},
        {"name": "mlx5_2", "model": "ConnectX-6", "ports": [{"port": 1, "rate": "HDR"}]},
        {"name": "mlx5_0", "model": "ConnectX-6", "rail": 0, "gpu": 0, "ports": [{"port": 1, "rate": "HDR"}]},
        {"name": "mlx5_3", "model": "ConnectX-6", "rail": 3,
         "ports": [{"port": 1, "rate": "HDR", "link_layer": "Ethernet"}]},
    ]
    text = render_environment(index_of(data), "lab")["hosts/gpu01/etc/nccl.conf"]
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_10:1,mlx5_2:1\n" in text
    assert "NCCL_SOCKET_IFNAME=eth0\n" in text
    # old NCCL versions read every line holding '=' as a variable, comments included
    assert all("=" not in line for line in text.splitlines() if line.startswith("#"))


def test_nccl_socket_ifname_is_the_nodes_management_interface() -> None:
    data = lab_data()
    _node(data, "gpu01")["mgmt_netdev"] = "eno1"
    for profile in data["profiles"]:
        profile["mgmt_netdev"] = "enp65s0f0"
    files = render_environment(index_of(data), "lab")
    assert "NCCL_SOCKET_IFNAME=eno1\n" in files["hosts/gpu01/etc/nccl.conf"]
    assert "NCCL_SOCKET_IFNAME=enp65s0f0\n" in files["hosts/gpu02/etc/nccl.conf"]
    assert "eth0" not in files["hosts/gpu02/etc/nccl.conf"]
    assert "# management\n" in files["network/hosts"]  # no one interface name to give
    assert "# management (eth0)\n" in render_environment(lab_index(), "lab")["network/hosts"]


def test_no_nccl_conf_without_gpus() -> None:
    files = render_environment(lab_index(), "lab")
    assert "hosts/sm01/etc/nccl.conf" not in files
    assert "hosts/lus01/etc/nccl.conf" not in files


def test_partitions_syntax() -> None:
    data = lab_data()
    data["opensm"]["partitions"] = [
        {"name": "storage", "pkey": 0x0002, "members": [{"device": "ALL_SWITCHES", "membership": "full"},
                                                        {"device": "SELF", "membership": "full"}]},
        {"name": "compute", "pkey": 0x0001, "ipoib": True, "mtu": 5, "members": [
            {"device": "gpu01", "membership": "full"}, {"device": "lus01", "membership": "limited"},
            {"device": "spine01", "membership": "full"}]},
    ]
    fab = FabricView(index_of(data))
    text = render_environment(fab.index, "lab")["opensm/sm01/partitions.conf"]
    g = fab.guids
    body = text.split("... ;\n", 1)[1]
    assert body == (
        "\nDefault=0x7fff, ipoib, defmember=full : ALL=full ;\n"
        "\ncompute=0x0001, ipoib, mtu=5 :\n"
        f"    0x{g.port('gpu01', 'mlx5_0', 1):016x}=full,  # gpu01/mlx5_0/1\n"
        f"    0x{g.port('gpu01', 'mlx5_1', 1):016x}=full,  # gpu01/mlx5_1/1\n"
        f"    0x{g.port('lus01', 'mlx5_0', 1):016x}=limited,  # lus01/mlx5_0/1\n"
        f"    0x{g.switch('spine01'):016x}=full ;  # spine01\n"
        "\nstorage=0x0002, defmember=full : ALL_SWITCHES=full, SELF=full ;\n"
    )


def test_slurm_groups_multi_homed_leaves_and_single_homed_stay() -> None:
    text = render_environment(lab_index(), "lab")["slurm/topology.conf"]
    assert "SwitchName=leaf-su01 Nodes=gpu[01-04]\n" in text
    assert "SwitchName=spine01 Switches=leaf-su[01-02]\n" in text
    data = lab_data()
    data["cables"] = [c for c in data["cables"] if c["a"].get("hca") != "mlx5_1"]  # rail 1 unplugged
    text = render_environment(index_of(data), "lab")["slurm/topology.conf"]
    assert "SwitchName=leaf-su01-r0 Nodes=gpu[01-04]\n" in text
    assert "SwitchName=spine02 Switches=leaf-su01-r0,leaf-su02-r0\n" in text
    assert "leaf-su01-r1" not in text and "leaf-infra01" not in text


def _slurm_yaml(files: dict[str, str]) -> dict[str, Any]:
    import yaml

    docs = yaml.safe_load(files["slurm/topology.yaml"])
    return {d["topology"]: d for d in docs}


def test_slurm_topology_yaml_tree_matches_topology_conf_and_blocks_are_leaf_groups() -> None:
    files = render_environment(lab_index(), "lab")
    topo = _slurm_yaml(files)
    assert list(topo) == ["tree", "block"]
    assert topo["tree"]["cluster_default"] is True and topo["block"]["cluster_default"] is False
    conf = [line for line in files["slurm/topology.conf"].splitlines() if line.startswith("SwitchName=")]
    as_conf = [
        f"SwitchName={s['switch']} {'Nodes' if 'nodes' in s else 'Switches'}={s.get('nodes', s.get('children'))}"
        for s in topo["tree"]["tree"]["switches"]
    ]
    assert as_conf == conf
    assert topo["block"]["block"] == {
        "block_sizes": [4],
        "blocks": [{"block": "leaf-su01", "nodes": "gpu[01-04]"}, {"block": "leaf-su02", "nodes": "gpu[05-08]"}],
    }
    three = _slurm_yaml(render_environment(index_of(_three_tier()), "lab"))
    assert {"switch": "core01", "children": "spine[01-02]"} in three["tree"]["tree"]["switches"]


def test_slurm_block_sizes_are_powers_of_two_from_the_smallest_block() -> None:
    from clusterforge.render.context_slurm import topology_yaml

    tree = {"switches": [
        {"switch": "a", "kind": "Nodes", "members": "n[1-3]", "size": 3, "comment": ""},
        {"switch": "b", "kind": "Nodes", "members": "n[4-13]", "size": 10, "comment": ""},
        {"switch": "s", "kind": "Switches", "members": "a,b", "size": 2, "comment": ""},
    ]}
    ctx = topology_yaml(tree)
    assert ctx["block_sizes"] == [2, 4, 8]
    assert [b["block"] for b in ctx["blocks"]] == ["a", "b"]


def test_slurm_gres_groups_nodes_by_gpu_model_and_count() -> None:
    data = lab_data()
    for name in ("gpu05", "gpu06"):
        _node(data, name)["gpus"] = {"model": "H100-SXM", "count": 4, "nvlink_topology": "nvswitch"}
    text = render_environment(index_of(data), "lab")["slurm/gres.conf"]
    lines = [line for line in text.splitlines() if line.startswith("NodeName=")]
    assert lines == [
        "NodeName=gpu[01-04,07-08] Name=gpu Type=a100_sxm File=/dev/nvidia[0-7]",
        "NodeName=gpu[05-06] Name=gpu Type=h100_sxm File=/dev/nvidia[0-3]",
    ]
    assert "sm01" not in text and "lus01" not in text


def _three_tier() -> dict[str, Any]:
    data = lab_data()
    data["switches"].append({"name": "core01", "model": "QM8700", "role": "core", "rack": "lab-core01", "u": 5})
    data["cables"] += [
        {"id": "C-00040", "a": "spine01/40", "b": "core01/1", "media": "AOC", "length_m": 3},
        {"id": "C-00041", "a": "spine02/40", "b": "core01/2", "media": "AOC", "length_m": 3},
    ]
    return data


def test_three_tier_roots_are_the_cores() -> None:
    files = render_environment(index_of(_three_tier()), "lab")
    roots = [line for line in files["opensm/sm01/root-guids.conf"].splitlines() if not line.startswith("#")]
    assert len(roots) == 1 and roots[0].endswith("# core01")
    assert "SwitchName=core01 Switches=spine[01-02]\n" in files["slurm/topology.conf"]


def test_opensm_conf_binds_a_known_port() -> None:
    data = lab_data()
    data["guid_locks"] = {"ports": {"sm01/mlx5_0/1": "0x0002c90300001234"}}
    sm = FabricView(index_of(data))
    text = render_environment(sm.index, "lab")["opensm/sm01/opensm.conf"]
    assert "\nguid 0x0002c90300001234\n" in text
    assert "\nsm_priority 15\n" in text and "\nrouting_engine ftree\n" in text


def test_lustre_clients_all_and_escaped_unit() -> None:
    data = lab_data()
    data["lustre"][0].update(clients="all", mount="/lustre/scratch-01")
    files = render_environment(index_of(data), "lab")
    unit = "hosts/sm01/etc/systemd/system/lustre-scratch\\x2d01.mount"
    assert unit in files
    assert "What=198.18.128.19@o2ib0:/lfs01\n" in files[unit]
    assert not any(p.startswith("hosts/lus01/etc/systemd") for p in files)
    assert 'options lnet networks="o2ib0(ib0)"' in files["hosts/lus01/etc/modprobe.d/lustre.conf"]


@pytest.mark.parametrize(("path", "unit"), [
    ("/lustre/lfs01", "lustre-lfs01"), ("/", "-"), ("/a//b/", "a-b"),
    ("/mnt/scratch-fs", "mnt-scratch\\x2dfs"), ("/.hidden/x.y", "\\x2ehidden-x.y"), ("/mnt/.pcc", "mnt-.pcc"),
])
def test_systemd_escape_path(path: str, unit: str) -> None:  # the whole table against systemd: storage/test_mount_units
    assert escape_path(path) == unit


def test_hosts_fragment_with_domain() -> None:
    data = lab_data()
    data["addressing"]["dns_domain"] = "lab.example"
    text = render_environment(index_of(data), "lab")["network/hosts"]
    assert "198.18.10.10\tgpu01.lab.example gpu01\n" in text
    assert "198.18.136.10\tgpu01-ib1.lab.example gpu01-ib1\n" in text


def test_csv_cells_are_quoted() -> None:
    assert csv_cell("plain") == "plain"
    assert csv_cell('a,"b"') == '"a,""b"""'
    assert csv_cell(" edge") == '" edge"'
    assert csv_cell(None) == ""


def test_work_order_columns() -> None:
    rows = render_environment(lab_index(), "lab")["cabling/work-order.csv"].splitlines()
    assert rows[0].split(",")[:4] == ["cable_id", "label", "a_rack", "a_u"]
    assert rows[1] == "C-00001,C-00001,lab-su01-r01,2,gpu01,mlx5_0/1,lab-su01-net,2,leaf-su01-r0,1,AOC,,10,,"
    assert len(rows) == 1 + 39


def test_a_label_that_needs_quoting_round_trips_through_both_csvs() -> None:
    import csv
    import io

    data = lab_data()
    data["cables"][0]["label"] = 'R1, "top" '
    data["cables"][1]["label"] = "L-0002"
    files = render_environment(index_of(data), "lab")
    order = list(csv.reader(io.StringIO(files["cabling/work-order.csv"])))
    assert order[1][:2] == ["C-00001", 'R1, "top" '] and len(order[1]) == 15
    assert order[2][:2] == ["C-00002", "L-0002"]
    labels = list(csv.reader(io.StringIO(files["cabling/labels.csv"])))
    assert labels[1] == ["C-00001", "A", 'R1, "top"  (AOC 10 m)', "lab-su01-r01 U2 gpu01 mlx5_0 port 1",
                         "to lab-su01-net U2 leaf-su01-r0 port 1"]
    assert all(len(row) == 5 for row in labels)


def _ndr(data: dict[str, Any]) -> dict[str, Any]:
    for prof in data["profiles"]:
        for hca in prof["hcas"]:
            hca["model"] = "ConnectX-7"
            for port in hca["ports"]:
                port["rate"] = "NDR"
    for sw in data["switches"]:
        sw["model"] = "QM9700"
    return data


def test_ibsim_simulates_ndr_at_hdr_and_says_so() -> None:
    fab = FabricView(index_of(_ndr(lab_data())))
    assert link_mode(fab, "NDR") == (4, "NDR", "HDR")
    assert link_mode(fab, "HDR100") == (2, "HDR", "HDR")
    assert link_mode(fab, "EDR") == (4, "EDR", "EDR")
    ctx, _labels, notes = net_context(fab)
    assert notes == ["4xNDR links are simulated at HDR lane speed: ibsim 0.10 cannot encode faster lanes"]
    assert ctx["extspeed"] == 4 and ctx["width"] == 2
    assert ctx["records"][0]["nports"] == 64 and ctx["records"][0]["devid"] == "0xd2f2"
    text = render_environment(fab.index, "lab")["fabric/ibsim.net"]
    assert "lid 0 4xNDR" not in text and "lid 0 4xHDR" in text and "\nextspeed=4\n" in text


def test_diagram_summarizes_large_fabrics(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(diagram_mod, "DETAIL_LIMIT", 4)
    text = render_environment(lab_index(), "lab")["fabric/fabric.dot"]
    assert "(summary)" in text
    assert '"compute nodes, group 0" [label="compute nodes, group 0\\n4 nodes"' in text
    assert '"leaves, group 0" -- "compute nodes, group 0" [label="8 x HDR"' in text
    assert '"spines" -- "leaves, group 0" [label="8 x HDR"' in text


def test_strict_undefined() -> None:
    with pytest.raises(jinja2.UndefinedError):
        environment().get_template("nccl/nccl.conf.j2").render({"banner": []})


def test_render_reports_placeholders_per_file() -> None:
    result = render(lab_index(), "lab")
    assert set(result.placeholders) == {
        "fabric/ibsim.net", "fabric/node-name-map", "opensm/sm01/cn-guids.conf",
        "opensm/sm01/io-guids.conf", "opensm/sm01/node-name-map", "opensm/sm01/root-guids.conf",
    }
    assert result.placeholders["opensm/sm01/root-guids.conf"] == ("spine01", "spine02")
    assert result.count_by_kind()["nccl/nccl.conf"] == 8


@pytest.mark.parametrize("env", ["staging", "prod"])
def test_example_environments_render(env: str) -> None:


    index = load_checked(ROOT / "inventories" / env).index
    fab = FabricView(index)
    result = render(index, env)
    book = fab.guids
    every = [*book.switches.values(), *book.ca_nodes.values(), *book.ca_ports.values()]
    assert len(set(every)) == len(every)  # node and port GUIDs all distinct
    assert sum(k == "nccl/nccl.conf" for k in result.kinds.values()) == len(fab.nodes_of("compute"))
    assert len(result.files["cabling/work-order.csv"].splitlines()) == 1 + len(index.inv.cables)
    assert all(text.endswith("\n") for text in result.files.values())


def test_csv_line_quotes_only_what_needs_it() -> None:
    from clusterforge.util.csvtext import csv_line

    assert csv_line(["C-1", "r01", "2", ""]) == "C-1,r01,2,"
    assert csv_line(["C-1", "a,b", "x"]) == 'C-1,"a,b",x'
    assert csv_line(["C-1", ' edge', "x"]) == 'C-1," edge",x'
    assert csv_line(["C-1", 'say "hi"', "x"]) == 'C-1,"say ""hi""",x'
    assert csv_line(["C-1", "tab\tinside", "x"]) == "C-1,tab\tinside,x"
    assert csv_line(["C-1", "two\nlines"]) == 'C-1,"two\nlines"'
