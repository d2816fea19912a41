"""A constructed small inventory with all three storage tiers (not a real site): two GPU nodes, two Lustre
servers in one failover pair on different leaves, an SM node that also runs the HSM copytool."""

from __future__ import annotations

import copy
from typing import Any

from clusterforge.check import run_checks
from clusterforge.model import Inventory
from clusterforge.model.index import Index

_HDR = [{"port": 1, "rate": "HDR"}]

BASE: dict[str, Any] = {
    "site": {"name": "mini", "rows": [{"name": "row-a", "index": 0}, {"name": "row-b", "index": 1}]},
    "racks": [{"name": "r01", "row": "row-a", "position": 0}, {"name": "r02", "row": "row-a", "position": 1},
              {"name": "core", "row": "row-b", "position": 0}],
    "profiles": [
        {"name": "gpu-node", "u_height": 4, "power_kw": 6.5,
         "gpus": {"model": "A100-SXM", "count": 8, "numa": [0, 0, 0, 0, 1, 1, 1, 1]},
         "hcas": [{"name": "mlx5_0", "model": "ConnectX-6", "rail": 0, "gpu": 0, "numa": 0, "netdev": "ib0",
                   "ports": _HDR},
                  {"name": "mlx5_1", "model": "ConnectX-6", "rail": 1, "gpu": 4, "numa": 1, "netdev": "ib1",
                   "ports": _HDR}],
         "storage": [{"kind": "nvme", "count": 1, "size_tb": 3.84, "role": "cache"}]},
        {"name": "oss", "u_height": 2, "power_kw": 0.9,
         "hcas": [{"name": "mlx5_0", "model": "ConnectX-6", "rail": 0, "netdev": "ib0", "ports": _HDR}],
         "storage": [{"kind": "ssd", "count": 12, "size_tb": 7.68, "role": "lustre-ost"},
                     {"kind": "ssd", "count": 2, "size_tb": 3.84, "role": "lustre-mdt"}]},
        {"name": "sm-node",
         "hcas": [{"name": "mlx5_0", "model": "ConnectX-6", "rail": 0, "netdev": "ib0", "ports": _HDR}]},
    ],
    "nodes": [
        {"name": "gpu01", "rack": "r01", "u": 2, "profile": "gpu-node"},
        {"name": "gpu02", "rack": "r02", "u": 2, "profile": "gpu-node"},
        {"name": "lus01", "rack": "core", "u": 10, "role": "storage", "profile": "oss"},
        {"name": "lus02", "rack": "core", "u": 12, "role": "storage", "profile": "oss"},
        {"name": "sm01", "rack": "core", "u": 20, "role": "subnet-manager", "profile": "sm-node"},
    ],
    "switches": [
        {"name": "leaf01", "model": "QM8700", "role": "leaf", "rack": "r01", "u": 40},
        {"name": "leaf02", "model": "QM8700", "role": "leaf", "rack": "r02", "u": 40},
        {"name": "spine01", "model": "QM8700", "role": "spine", "rack": "core", "u": 40},
    ],
    "cables": [
        {"id": f"C-{k:03d}", "a": a, "b": b, "media": "AOC", "length_m": 20}
        for k, (a, b) in enumerate([
            ("gpu01/mlx5_0/1", "leaf01/1"), ("gpu01/mlx5_1/1", "leaf02/1"), ("gpu02/mlx5_0/1", "leaf01/2"),
            ("gpu02/mlx5_1/1", "leaf02/2"), ("lus01/mlx5_0/1", "leaf01/3"), ("lus02/mlx5_0/1", "leaf02/3"),
            ("sm01/mlx5_0/1", "spine01/3"), ("leaf01/21", "spine01/1"), ("leaf02/21", "spine01/2")], start=1)
    ],
    "addressing": {
        "management": {"cidr": "10.0.0.0/24", "gateway": "10.0.0.1", "first": 10},
        "bmc": {"cidr": "10.0.1.0/24", "first": 10},
        "ipoib": [{"name": "ib0", "rail": 0, "cidr": "10.100.0.0/24"},
                  {"name": "ib1", "rail": 1, "cidr": "10.100.1.0/24"}],
    },
    "software": {"doca_ofed": "24.04-0.7.0.0", "lustre_client": "2.15.5", "lemur": "0.6.0"},
    "opensm": {"sm_nodes": [{"node": "sm01", "priority": 15}]},
    "lustre": [{
        "name": "lfs01", "mgs_nids": ["lus01@o2ib0"], "mount": "/lustre/lfs01", "interfaces": ["ib0"],
        "servers": ["lus01", "lus02"], "failover_pairs": [["lus01", "lus02"]],
        "targets": [
            {"kind": "mdt", "index": 0, "server": "lus01", "devices": 2, "layout": "raid1", "mgs": True},
            {"kind": "mdt", "index": 1, "server": "lus02", "devices": 2, "layout": "raid1"},
            {"kind": "ost", "index": 0, "server": "lus01", "devices": 6},
            {"kind": "ost", "index": 1, "server": "lus01", "devices": 6},
            {"kind": "ost", "index": 2, "server": "lus02", "devices": 6},
            {"kind": "ost", "index": 3, "server": "lus02", "devices": 6},
        ],
        "pcc": {"size_tb": 2, "rule": "projid={1000}"},
        "hsm": {"agents": ["sm01"], "endpoint": "https://192.0.2.10:7480", "bucket": "lfs01-archive",
                "archive_id": 2, "credentials": {"file": "/etc/lustre/hsm-s3.cred"}},
    }],
}


def data(**changes: Any) -> dict[str, Any]:
    """A deep copy of BASE to edit."""
    out = copy.deepcopy(BASE)
    out.update(copy.deepcopy(changes))
    return out


def index_of(d: dict[str, Any]) -> Index:
    return Index(Inventory.model_validate(d))


def issues(d: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(dotted path, rule, message) of every check issue of the inventory `d`."""
    from clusterforge.util.errors import format_path

    return [(format_path(i.path), i.rule, i.message) for i in run_checks(index_of(d))]
