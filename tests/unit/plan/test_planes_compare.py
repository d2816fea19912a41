"""`plan size --planes/--su-size` and `plan compare` with a rail-plane design beside three tiers."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from clusterforge.cli.main import app
from clusterforge.plan import EXAMPLE_PRICES, PlanError, compare, parse_option

runner = CliRunner()


def test_size_cli_two_leaves_per_rail() -> None:
    result = runner.invoke(app, ["plan", "size", "--nodes", "64", "--ports-per-node", "8", "--radix", "64",
                                 "--su-size", "64", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["su_size"], data["leaves_per_rail"], data["scalable_units"]) == (64, 2, 1)
    assert data["leaf_ports"] == {"down": 32, "up": 32}
    assert data["switches"] == {"leaf": 16, "spine": 8, "core": 0}


def test_size_cli_rail_planes_text_and_errors() -> None:
    result = runner.invoke(app, ["plan", "size", "--nodes", "512", "--ports-per-node", "8", "--radix", "64",
                                 "--planes", "rail"])
    assert result.exit_code == 0, result.output
    assert "8 rail planes of 1 rail(s)" in result.output
    assert "switches: 128 leaf, 64 spine, 0 core (192 in all)" in result.output
    assert "0 across them" in result.output
    bad = runner.invoke(app, ["plan", "size", "--nodes", "64", "--ports-per-node", "8", "--radix", "64",
                              "--planes", "3"])
    assert bad.exit_code == 3 and "3 rails per plane do not divide the 8 rails" in bad.output
    assert "Traceback" not in bad.output
    junk = runner.invoke(app, ["plan", "size", "--nodes", "64", "--ports-per-node", "8", "--radix", "64",
                               "--planes", "x"])
    assert junk.exit_code != 0 and "--planes must be rail" in junk.output


def test_compare_rail_planes_beside_three_tiers() -> None:
    # 512 nodes x 8 NDR rails on QM9700: three tiers 128/128/64 switches, 3 x 4,096 cables;
    # rail planes 128/64/0 and 2 x 4,096; the same bisection within, none across planes
    three, planes = compare([parse_option("T3:hcas=8"), parse_option("RP:hcas=8,planes=rail")],
                            EXAMPLE_PRICES, nodes=512)
    a, b = three.to_dict(), planes.to_dict()
    assert (a["tiers"], b["tiers"]) == (3, 2)
    assert a["switches"] == {"leaf": 128, "spine": 128, "core": 64}
    assert b["switches"] == {"leaf": 128, "spine": 64, "core": 0}
    assert sum(a["cables"].values()) == 12288 and sum(b["cables"].values()) == 8192
    assert (a["planes"], b["planes"]) == (1, 8)
    assert a["bisection_gbps"] == b["bisection_gbps"] == 512 * 8 * 400 / 2
    assert a["bisection_across_planes_gbps"] == a["bisection_gbps"] and b["bisection_across_planes_gbps"] == 0
    assert b["optics"] > 0 and a["optics"] >= b["optics"]
    assert b["cost_per_100_nodes"]["fabric"] < a["cost_per_100_nodes"]["fabric"]  # 128 fewer switches


def test_compare_option_planes_must_be_rail_or_a_number() -> None:
    with pytest.raises(PlanError) as info:
        parse_option("X:planes=some")
    assert "planes must be rail" in info.value.message
