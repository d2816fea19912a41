"""Cable matching: by id, then by ends; each kind of change named once."""

from __future__ import annotations

from clusterforge.day2 import diff_cables
from clusterforge.model import Cable


def c(cid: str, a: str, b: str, **kw: object) -> Cable:
    return Cable.model_validate({"id": cid, "a": a, "b": b, "media": kw.pop("media", "AOC"),
                                 "length_m": kw.pop("length_m", 10), **kw})


OLD = [
    c("C1", "gpu01/mlx5_0/1", "leaf1/1"),
    c("C2", "gpu01/mlx5_1/1", "leaf2/1"),
    c("C3", "gpu02/mlx5_0/1", "leaf1/2"),
    c("C4", "gpu02/mlx5_1/1", "leaf2/2"),
    c("C5", "leaf1/21", "spine1/1", media="fiber", length_m=30, fiber_type="OM4", trunk="T1", lane_group=0),
    c("C6", "leaf2/21", "spine1/2"),
    c("C7", "leaf1/22", "spine1/3"),
]


def test_no_change_when_equal_or_only_generated_or_ends_swapped() -> None:
    new = [*OLD[:5], c("C6", "spine1/2", "leaf2/21"), OLD[6].model_copy(update={"generated": True})]
    assert diff_cables(OLD, new) == []


def test_each_kind_of_change() -> None:
    new = [
        c("C1", "gpu01/mlx5_0/1", "leaf1/3"),  # moved: its b end
        c("C2", "gpu01/mlx5_1/1", "leaf2/1", media="fiber", length_m=10, fiber_type="OM4"),  # replaced
        c("C3", "gpu02/mlx5_0/1", "leaf1/2", label="L-3"),  # relabelled (label)
        c("C44", "gpu02/mlx5_1/1", "leaf2/2"),  # relabelled (id): same two ports
        c("C5", "leaf1/21", "spine1/1", media="fiber", length_m=30, fiber_type="OM4", trunk="T1", lane_group=2),
        c("C8", "leaf2/22", "spine1/4"),  # added
    ]  # C6 and C7 removed
    changes = {(ch.change, ch.id): ch for ch in diff_cables(OLD, new)}
    assert set(changes) == {("moved", "C1"), ("replaced", "C2"), ("relabelled", "C3"), ("relabelled", "C44"),
                            ("rerouted", "C5"), ("added", "C8"), ("removed", "C6"), ("removed", "C7")}
    assert changes[("moved", "C1")].fields == ("b",)
    assert changes[("replaced", "C2")].fields == ("media", "fiber_type")
    assert changes[("relabelled", "C3")].fields == ("label",)
    relabel = changes[("relabelled", "C44")]
    assert relabel.fields == ("id",) and relabel.old is not None and relabel.old.id == "C4"
    assert changes[("rerouted", "C5")].fields == ("lane_group",)
    assert changes[("removed", "C6")].new is None and changes[("removed", "C6")].cable.id == "C6"
    # order: the new inventory's, removed ones last
    assert [ch.id for ch in diff_cables(OLD, new)][-2:] == ["C6", "C7"]


def test_the_fast_cable_comparison_covers_every_field() -> None:
    # inventory_diff._same compares these fields by hand (pydantic's __eq__ was 0.6 s at 50,000 cables):
    # a new Cable or PortRef field must be added there too
    from clusterforge.model.base import PortRef

    assert set(Cable.model_fields) == {"id", "a", "b", "media", "length_m", "label", "fiber_type", "trunk",
                                       "lane_group", "generated"}
    assert set(PortRef.model_fields) == {"device", "port", "hca"}
    base = c("C1", "gpu01/mlx5_0/1", "leaf1/1")
    for field, value in (("label", "L"), ("length_m", 11), ("generated", True), ("lane_group", 1)):
        assert diff_cables([base], [base.model_copy(update={field: value})]) != [] or field == "generated"
