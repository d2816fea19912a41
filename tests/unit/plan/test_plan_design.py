"""Fabric arithmetic: su_size, uplinks, spine/core counts, tiers, and the errors with their suggestions."""

from __future__ import annotations

import pytest

from clusterforge.catalog import catalog
from clusterforge.model import FabricSpec
from clusterforge.plan import PlanError, resolve
from clusterforge.plan.design import default_su_size

CAT = catalog()


def spec(**kw: object) -> FabricSpec:
    kw.setdefault("rate", "NDR")
    kw.setdefault("leaf_model", "QM9700")
    return FabricSpec(**kw)  # type: ignore[arg-type,unused-ignore]


@pytest.mark.parametrize(("ports", "ratio", "su"), [
    (40, 1, 20), (40, 2, 24), (40, 3, 30), (40, 4, 32),  # 2:1: 26 would leave 13 (odd) uplinks
    (64, 1, 32), (64, 2, 40), (64, 3, 48), (64, 4, 48),
])
def test_default_su_size_is_the_largest_with_even_uplinks(ports: int, ratio: int, su: int) -> None:
    assert default_su_size(ports, ratio) == su
    assert su + su // ratio <= ports


def test_two_tier_fewest_spines_that_divide_the_uplinks() -> None:
    # 4 SUs x 8 rails = 32 leaves x 32 uplinks = 1024 uplinks; 64-port spines -> at least 16;
    # 16 divides 32: 16 spines, 2 links from every leaf.
    d = resolve(spec(su_size=32), CAT, nodes=128, rails=8)
    assert (d.tiers, d.leaves, d.spines, d.leaf_spine_links, d.cores) == (2, 32, 16, 2, 0)


def test_two_tier_small_fabric_keeps_two_spines() -> None:
    d = resolve(spec(su_size=32), CAT, nodes=32, rails=1)  # 1 leaf: one spine would do, two are kept
    assert (d.spines, d.leaf_spine_links) == (2, 16)


def test_max_sus_sizes_spines_for_growth() -> None:
    now = resolve(spec(su_size=32), CAT, nodes=64, rails=8)
    later = resolve(spec(su_size=32, max_sus=8), CAT, nodes=64, rails=8)
    assert (now.spines, now.leaf_spine_links) == (8, 4)  # 16 leaves x 4 links = 64 ports
    assert (later.spines, later.leaf_spine_links) == (32, 1)  # sized for 64 leaves


def test_three_tier_2048_nodes_8_rails() -> None:
    # 64 SUs x 8 rails = 512 leaves > 64: three tiers. Pods of 4 SUs (32 leaves x 1 link = 32 of
    # a spine's 64 ports), 32 spines per pod, 16 pods; spine up 32 = cores per plane C x links q with
    # 16 pods x q <= 64 -> q = 4, C = 8; 32 planes x 8 = 256 cores.
    d = resolve(spec(su_size=32), CAT, nodes=2048, rails=8)
    assert (d.tiers, d.sus_per_pod, d.pods, d.spines_per_pod, d.cores_per_plane, d.spine_core_links) == (
        3, 4, 16, 32, 8, 4)
    assert (d.leaves, d.spines, d.cores) == (512, 512, 256)


def test_auto_picks_two_tiers_until_the_spines_are_full() -> None:
    assert resolve(spec(su_size=32), CAT, nodes=256, rails=8).tiers == 2  # 64 leaves
    assert resolve(spec(su_size=32), CAT, nodes=257, rails=8).tiers == 3  # 72 leaves


def test_su_size_not_divisible_by_ratio() -> None:
    with pytest.raises(PlanError) as info:
        resolve(spec(su_size=30, oversubscription="4:1"), CAT, nodes=60, rails=1)
    assert "su_size 30 does not divide by 4" in info.value.message
    assert info.value.suggestions == ("su_size: 28 (7 uplinks per leaf)", "su_size: 32 (8 uplinks per leaf)")


def test_su_size_beyond_the_leaf_radix() -> None:
    # a unit wider than a leaf takes two leaves per rail (tests/unit/plan/test_planes_sizes.py); pinned to one:
    with pytest.raises(PlanError) as info:
        resolve(spec(su_size=40, leaves_per_rail=1), CAT, nodes=80, rails=1)
    assert info.value.message == "su_size 40 at 1:1 needs 40 down + 40 up = 80 ports per leaf; QM9700 has 64 ports"
    assert info.value.suggestions[0] == "su_size: 32 (32 down + 32 up)"
    assert "leaves_per_rail: 2" in info.value.suggestions
    assert any(s.startswith("split: true") for s in info.value.suggestions)


def test_spine_count_that_does_not_divide() -> None:
    with pytest.raises(PlanError) as info:
        resolve(spec(su_size=32, spines=12), CAT, nodes=128, rails=8)
    assert info.value.message == "32 uplinks per leaf cannot be spread evenly over 12 spines"
    assert info.value.suggestions == ("spines: 16 (2 links from every leaf)",)


def test_spine_count_too_small_for_the_leaves() -> None:
    with pytest.raises(PlanError) as info:
        resolve(spec(su_size=32, spines=8), CAT, nodes=128, rails=8)
    assert "8 spines take 4 links from each of 32 leaves = 128 ports" in info.value.message
    assert info.value.suggestions == ("spines: 16 (2 links from every leaf)",)


def test_forced_two_tiers_that_do_not_fit() -> None:
    with pytest.raises(PlanError) as info:
        resolve(spec(su_size=32, tiers=2), CAT, nodes=512, rails=8)
    assert "16 scalable units x 8 rails = 128 leaves" in info.value.message
    assert "at most 64 leaves (8 units = 256 nodes)" in info.value.message
    assert "tiers: 3 (or auto)" in info.value.suggestions


def test_too_big_for_three_tiers() -> None:
    with pytest.raises(PlanError) as info:
        resolve(spec(su_size=32), CAT, nodes=32 * 260, rails=8)
    assert "cores connect at most 64 pods (256 units = 8192 nodes)" in info.value.message


def test_max_sus_below_the_nodes() -> None:
    with pytest.raises(PlanError, match=r"100 nodes fill 4 scalable units of 32, more than fabric.max_sus 2"):
        resolve(spec(su_size=32, max_sus=2), CAT, nodes=100, rails=1)


def test_split_needs_a_splittable_model() -> None:
    with pytest.raises(PlanError, match="Q3400 ports cannot be split"):
        resolve(spec(leaf_model="Q3400", split=True, rate="XDR"), CAT, nodes=10, rails=1)


def test_split_doubles_the_ports() -> None:
    d = resolve(spec(split=True, rate="NDR200"), CAT, nodes=64, rails=8)
    assert (d.leaf.ports, d.leaf.rate, d.su_size, d.uplinks) == (128, "NDR200", 64, 64)


def test_unknown_model() -> None:
    with pytest.raises(PlanError, match="unknown switch model 'QM1234'"):
        resolve(spec(leaf_model="QM1234"), CAT, nodes=10, rails=1)


def test_error_text_lists_the_suggestions() -> None:
    text = str(PlanError("x does not fit", ["a: 1", "b: 2"]))
    assert text == "x does not fit\nnearest valid designs:\n  - a: 1\n  - b: 2"
