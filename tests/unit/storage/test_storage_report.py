"""`plan storage`: the sizing report's figures from the constructed inventory (expected values worked out
here from the declared devices, not read back from the code), the bottleneck as the settings move it, the
three tiers, the command in text and JSON, and the generated 2,048-node inventory."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from _storage_util import data, index_of
from typer.testing import CliRunner

from clusterforge.check.checked import load_checked
from clusterforge.cli.main import app
from clusterforge.model.inventory import PriceTable
from clusterforge.plan import EXAMPLE_PRICES
from clusterforge.plan.storage import FsStorage, storage_report

ROOT = Path(__file__).resolve().parents[3]
NO_PRICES = PriceTable(currency="EUR", example=False, items={})


def _report(d: dict[str, Any], prices: PriceTable = NO_PRICES) -> FsStorage:
    (r,) = storage_report(index_of(d), prices)
    return r


def test_capacity_bandwidth_and_demand_of_the_constructed_inventory() -> None:
    r = _report(data())
    # 4 OSTs of 6 x 7.68 TB in raid6 (4 data devices each); 2 MDTs of 2 x 3.84 TB in raid1
    assert r.targets == {"mdt": 2, "ost": 4}
    assert r.ost_raw_tb == pytest.approx(4 * 6 * 7.68) and r.ost_usable_tb == pytest.approx(4 * 4 * 7.68)
    assert r.mdt_raw_tb == pytest.approx(2 * 2 * 3.84) and r.mdt_usable_tb == pytest.approx(2 * 3.84)
    # 16 data SSDs at the default 1 GB/s; 2 servers x 1 HDR port (200 Gb/s = 25 GB/s); 16 GPUs x 0.875
    assert r.devices_gbps == pytest.approx(16.0) and r.links_gbps == pytest.approx(50.0)
    assert r.degraded_gbps == pytest.approx(25.0)
    assert (r.gpus, r.demand_gbps) == (16, pytest.approx(14.0))
    assert r.bottleneck == "GPU demand" and "storage keeps up" in r.verdict
    assert [(s.server, s.osts, s.ports, s.cabled) for s in r.servers] == [("lus01", 2, 1, 1), ("lus02", 2, 1, 1)]


def test_the_bottleneck_moves_with_the_settings() -> None:
    d = data(storage_sizing={"read_gbps_per_gpu": 2.0})  # 32 GB/s asked of 16 GB/s of devices
    r = _report(d)
    assert r.bottleneck == "OST devices" and r.demand_gbps == pytest.approx(32.0)
    assert "(50% of demand" in r.verdict
    # devices 16 x 5 = 80 > links 50, and 16 GPUs x 4 = 64 asked
    d = data(storage_sizing={"read_gbps_per_gpu": 4.0, "device_read_gbps": {"ssd": 5.0}})
    r = _report(d)
    assert r.bottleneck == "OSS links" and r.devices_gbps == pytest.approx(80.0)
    assert "add OSS links" in r.verdict


def test_a_profile_overrides_the_per_gpu_demand_and_only_compute_nodes_count() -> None:
    r = _report(data(storage_sizing={"profiles": {"gpu-node": 0.5}}))
    assert r.demand_gbps == pytest.approx(16 * 0.5)
    d = data()
    d["nodes"][1]["role"] = "login"  # gpu02 no longer mounts (clients: compute)
    assert _report(d).gpus == 8


def test_the_three_tiers_and_their_cost() -> None:
    d = data()
    d["lustre"][0]["hsm"].update(raw_tb=600, read_gbps=12.5)
    prices = PriceTable(currency="EUR", example=False,
                        items={"storage/nvme/per_tb": 100, "storage/ssd/per_tb": 50, "storage/object/per_tb": 10})
    cache, lustre, archive = _report(d, prices).tiers
    assert (cache.raw_tb, cache.usable_tb) == (pytest.approx(2 * 3.84), pytest.approx(2 * 2.0))
    assert cache.read_gbps == pytest.approx(2 * 7.0) and cache.cost == pytest.approx(100 * 2 * 3.84)
    assert lustre.raw_tb == pytest.approx(4 * 6 * 7.68 + 2 * 2 * 3.84) and lustre.read_gbps == pytest.approx(16.0)
    assert lustre.cost == pytest.approx(50 * (4 * 6 * 7.68 + 2 * 2 * 3.84))
    assert archive.usable_tb == pytest.approx(600 * 4 / 6) and archive.read_gbps == 12.5
    assert archive.cost == pytest.approx(6000)
    assert [t.latency.split(",")[0] for t in (cache, lustre, archive)] == ["local", "fabric", "object"]
    # without prices, no cost is made up
    assert all(t.cost is None for t in _report(d).tiers)


def test_a_file_system_without_targets_is_not_sized() -> None:
    d = data()
    d["lustre"][0]["targets"] = []
    d["lustre"][0]["mgs_nids"] = ["lus01@o2ib0"]
    assert storage_report(index_of(d), NO_PRICES) == []


def _env(tmp_path: Path, d: dict[str, Any]) -> Path:
    env = tmp_path / "env"
    env.mkdir()
    (env / "inventory.yaml").write_text(yaml.safe_dump(d, sort_keys=False), encoding="utf-8")
    return env


def test_the_command_in_text_and_json(tmp_path: Path) -> None:
    env = _env(tmp_path, data(storage_sizing={"read_gbps_per_gpu": 2.0}))
    text = CliRunner().invoke(app, ["plan", "storage", str(env)])
    assert text.exit_code == 0, text.output
    assert "bottleneck: OST devices" in text.output and "storage tiers (EXAMPLE prices" in text.output
    got = CliRunner().invoke(app, ["plan", "storage", str(env), "--format", "json"])
    assert got.exit_code == 0, got.output
    doc = json.loads(got.stdout)
    (fs,) = doc["file_systems"]
    assert fs["bottleneck"] == "OST devices" and fs["supply_gbps"] == pytest.approx(16.0)
    assert [t["name"] for t in fs["tiers"]] == ["cache", "lustre", "archive"]
    assert doc["settings"]["read_gbps_per_gpu"] == 2.0


def test_the_command_refuses_an_invalid_inventory(tmp_path: Path) -> None:
    d = data()
    d["lustre"][0]["hsm"]["agents"] = []
    result = CliRunner().invoke(app, ["plan", "storage", str(_env(tmp_path, d))])
    assert result.exit_code == 3 and "has no agent node" in result.output


def test_the_generated_2048_node_inventory(tmp_path: Path) -> None:
    """bench/gen_inventory.py --storage 20: 2 MDT servers with one OST of 6 SSDs, 18 with two; 8 H100 a node."""
    env = tmp_path / "b"
    subprocess.run([sys.executable, str(ROOT / "bench" / "gen_inventory.py"), "bench", str(env), "--nodes", "2048",
                    "--storage", "20"], check=True, capture_output=True)
    index = load_checked(env).index
    start = time.perf_counter()
    (r,) = storage_report(index, EXAMPLE_PRICES)
    took = time.perf_counter() - start
    osts = 2 * 1 + 18 * 2
    assert r.targets["ost"] == osts and r.ost_raw_tb == pytest.approx(osts * 6 * 7.68)
    assert r.devices_gbps == pytest.approx(osts * 4 * 1.0)
    assert r.links_gbps == pytest.approx(20 * 400 / 8)  # one NDR port a server
    assert (r.gpus, r.demand_gbps) == (2048 * 8, pytest.approx(2048 * 8 * 0.875))
    assert r.bottleneck == "OST devices"
    assert took < 1.0, f"{took:.3f} s"  # measured 4 ms on the dev machine: a bound against quadratic work
