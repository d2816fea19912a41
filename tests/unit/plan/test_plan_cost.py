"""BOM, prices, sizing without an inventory, and the design brief's options compared."""

from __future__ import annotations

import pytest
from _plan_util import prod_without_fabric, synth, with_plan

from clusterforge.model import PriceTable
from clusterforge.model.index import Index
from clusterforge.plan import (
    EXAMPLE_PRICES,
    OPTIONS,
    PlanError,
    SizeRequest,
    bill_of_materials,
    compare,
    parse_option,
    plan_fabric,
    size,
    size_dict,
)
from clusterforge.plan.bom import price


def test_bom_of_prod() -> None:
    inv = with_plan(prod_without_fabric(rate="HDR", leaf_model="QM8700", roles=["compute"]))
    bom = bill_of_materials(Index(inv), EXAMPLE_PRICES)
    qty: dict[str, int] = {}
    for line in bom.lines:
        qty[line.item] = qty.get(line.item, 0) + line.quantity
    assert qty["switch/QM8700"] == 46
    assert qty["hca/ConnectX-6"] == 512 and qty["gpu/A100-SXM"] == 256 * 8
    assert qty["cable/AOC/HDR"] == 512
    assert qty["transceiver/HDR/MMF"] == 2 * 520  # one at each end of every trunked link
    assert qty["jumper/OM4"] == 2 * 520
    assert qty["trunk/OM4"] == 182 and qty["patch_panel/mpo24"] == 22
    assert bom.unpriced == [] and bom.example_prices and bom.currency == "USD"
    assert bom.total == pytest.approx(sum(line.total or 0 for line in bom.lines))
    assert set(bom.by_category()) == {"switch", "hca", "gpu", "transceiver", "cable", "jumper", "trunk",
                                      "patch_panel"}


def test_price_lookup() -> None:
    table = PriceTable(items={"cable/AOC/HDR": 100, "cable/AOC/HDR/per_m": 10, "cable/AOC/HDR/3m": 111,
                              "switch/X": 5})
    assert price(table, "cable/AOC/HDR", 10) == 200
    assert price(table, "cable/AOC/HDR", 3) == 111
    assert price(table, "switch/X", None) == 5
    assert price(table, "switch/Y", None) is None


def test_size_runs_the_real_generator() -> None:
    sized = size(SizeRequest(nodes=2048, ports_per_node=8, radix=64))
    data = size_dict(sized)
    assert data["tiers"] == 3
    assert data["switches"] == {"leaf": 512, "spine": 512, "core": 256}
    assert data["cables"] == {"node_leaf": 16384, "leaf_spine": 16384, "spine_core": 16384}
    assert data["oversubscription"] == "1:1" and data["bisection_gbps"] == 16384 * 400 / 2


def test_size_matches_the_generator_on_the_same_spec() -> None:
    data = size_dict(size(SizeRequest(nodes=128, ports_per_node=8, radix=64, su_size=32)))
    plan = plan_fabric(synth(128, 8, su_size=32))
    assert data["switches"] == plan.switch_counts() and data["cables"] == plan.cable_counts()


def test_size_with_a_radix_not_in_the_catalog() -> None:
    data = size_dict(size(SizeRequest(nodes=100, ports_per_node=1, radix=48, oversubscription="2:1")))
    assert data["models"]["leaf"] == "generic-48"
    assert (data["su_size"], data["leaf_ports"]["up"]) == (32, 16)


def test_size_errors_are_plan_errors() -> None:
    with pytest.raises(PlanError, match="su_size 30 does not divide by 4"):
        size(SizeRequest(nodes=100, ports_per_node=1, radix=40, oversubscription="4:1", su_size=30))


def test_brief_options_compared() -> None:
    a, b, c = compare([OPTIONS["A"], OPTIONS["B"], OPTIONS["C"]], EXAMPLE_PRICES, nodes=100)
    # A: 100 nodes x 4 NDR rails, QM9700 1:1, su 32 -> 4 SUs x 4 = 16 leaves; 16 x 32 uplinks / 64 -> 8 spines
    assert a.planned.plan.switch_counts() == {"leaf": 16, "spine": 8, "core": 0}
    # B: 2 HDR rails, QM8700 2:1 -> su 24 (24 down / 12 up); 5 SUs x 2 = 10 leaves; 10 x 12 / 40 -> 3 spines
    assert b.planned.plan.switch_counts() == {"leaf": 10, "spine": 3, "core": 0}
    # C: 1 EDR rail, QM8700 4:1 -> su 32 (32 / 8); 4 leaves; 2 spines (the fewest kept)
    assert c.planned.plan.switch_counts() == {"leaf": 4, "spine": 2, "core": 0}
    # EDR nodes on HDR uplinks: 32 x 100 over 8 x 200 Gb/s is 2:1 actually achieved
    assert c.planned.report.oversubscription == "2:1"
    da, db, dc = (x.to_dict() for x in (a, b, c))
    assert da["bisection_gbps"] > db["bisection_gbps"] > dc["bisection_gbps"]
    assert da["cost_per_100_nodes"]["fabric"] > db["cost_per_100_nodes"]["fabric"] > dc["cost_per_100_nodes"][
        "fabric"]
    assert da["example_prices"] is True and da["unpriced"] == []


def test_parse_option() -> None:
    assert parse_option("B") == OPTIONS["B"]
    opt = parse_option("B8=B:hcas=8,ratio=1:1")
    assert (opt.name, opt.gpu, opt.hcas, opt.ratio) == ("B8", "A100-SXM", 8, "1:1")
    with pytest.raises(PlanError, match="unknown key 'colour'"):
        parse_option("X:colour=red")
    with pytest.raises(PlanError, match="ratio must be one of"):
        parse_option("X:ratio=5:1")
