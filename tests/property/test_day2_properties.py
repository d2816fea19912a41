"""Day-2 diff properties over random edits of the lab's cabling: every edit found once, as what it is."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cf_lab_inventory import index_of, lab_data, lab_inventory
from clusterforge.day2 import change_plan, diff_inventories
from clusterforge.model.index import Index

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


lab = lab_inventory


def with_cables(cables: list[dict[str, Any]]) -> Index:
    data = lab_data()
    data["cables"] = cables
    return index_of(data)


@st.composite
def edits(draw: st.DrawFn) -> tuple[set[str], set[str], set[str]]:
    ids = [c.id for c in lab().cables]
    chosen = draw(st.lists(st.sampled_from(ids), unique=True, max_size=len(ids)))
    cut = sorted(draw(st.lists(st.integers(0, len(chosen)), min_size=2, max_size=2)))
    return set(chosen[:cut[0]]), set(chosen[cut[0]:cut[1]]), set(chosen[cut[1]:])


@FAST
@given(edits())
def test_removed_renamed_and_relabelled_cables_are_each_found_once(edit: tuple[set[str], set[str], set[str]]) -> None:
    removed, renamed, labelled = edit
    cables = []
    for c in lab().model_dump(mode="json")["cables"]:
        if c["id"] in removed:
            continue
        if c["id"] in renamed:
            c["id"] = "X" + c["id"]
        if c["id"] in labelled:
            c["label"] = "L" + c["id"]
        cables.append(c)
    old, new = Index(lab()), with_cables(cables)
    diff = diff_inventories(old, new)
    assert diff.devices == ()
    found = {(ch.change, ch.id) for ch in diff.cables}
    expected = ({("removed", i) for i in removed} | {("relabelled", "X" + i) for i in renamed}
                | {("relabelled", i) for i in labelled})
    assert found == expected
    assert len(diff.cables) == len(expected)  # each once
    assert diff_inventories(new, new).empty
    if removed:  # the plan unplugs each removed cable exactly once, in the rack of its a end
        plan = change_plan(old, new, "inventories/lab", "lab")
        unplugged = sorted(s.subject for s in plan.steps if s.phase == "unplug")
        assert unplugged == sorted(removed)


def _move(data: dict[str, Any], name: str, rack: str, u: int) -> None:
    next(n for n in data["nodes"] if n["name"] == name).update(rack=rack, u=u)


_EDITS: dict[str, Any] = {
    "driver": lambda d: d["software"].update(nvidia_driver="550.127.05"),
    "ofed": lambda d: d["software"].update(doca_ofed="23.10-2.1.3.1"),
    "nccl": lambda d: d["software"].update(nccl="2.22.3-1"),
    "move gpu04": lambda d: _move(d, "gpu04", "lab-su02-r01", 18),
    "swap gpu01/gpu05": lambda d: (_move(d, "gpu01", "lab-su02-r01", 2), _move(d, "gpu05", "lab-su01-r01", 2)),
    "move in rack gpu06": lambda d: _move(d, "gpu06", "lab-su02-r01", 30),
    "cooling": lambda d: next(r for r in d["racks"] if r["name"] == "lab-su02-r01").update(cooling="cold-plate"),
    "cable moved": lambda d: next(c for c in d["cables"] if c["id"] == "C-00015").update(b="leaf-su02-r0/6"),
    "cable removed": lambda d: d.update(cables=[c for c in d["cables"] if c["id"] != "C-00003"]),
    "relabel": lambda d: next(c for c in d["cables"] if c["id"] == "C-00001").update(label="L-1"),
    "replaced cable": lambda d: next(c for c in d["cables"] if c["id"] == "C-00002").update(length_m=12),
    "gpu03 retired, gpu09 in its slot": lambda d: _replace_gpu03(d),
    "gpu01 and gpu02 moved up": lambda d: (_move(d, "gpu01", "lab-su01-r01", 30),
                                           _move(d, "gpu02", "lab-su01-r01", 34)),
    "leaf replaced": lambda d: d["guid_locks"]["switches"].pop("leaf-su01-r1"),
    "spine added": lambda d: (d["switches"].append({"name": "spine03", "model": "QM8700", "role": "spine",
                                                     "rack": "lab-core01", "u": 5}),
                              d["cables"].append({"id": "C-00042", "a": "leaf-infra01/25", "b": "spine03/1",
                                                  "media": "AOC", "length_m": 3})),
}


def _replace_gpu03(d: dict[str, Any]) -> None:
    d["nodes"] = [n for n in d["nodes"] if n["name"] != "gpu03"]
    d["cables"] = [c for c in d["cables"] if c["id"] not in ("C-00005", "C-00006")]
    d["nodes"].append({"name": "gpu09", "rack": "lab-su01-r01", "u": 10, "profile": "gpu-node"})
    d["cables"] += [{"id": f"C-1000{r}", "a": f"gpu09/mlx5_{r}/1", "b": f"leaf-su01-r{r}/3", "media": "AOC",
                     "length_m": 10} for r in (0, 1)]


@FAST
@given(st.lists(st.sampled_from(sorted(_EDITS)), unique=True, max_size=6),
       st.sampled_from([25, 50, 100]))
def test_random_inventory_edits_give_plans_the_verifier_proves(chosen: list[str], cap: int) -> None:
    from clusterforge.day2.verify import verify

    data = lab_data()
    data["deploy"]["max_drain"] = {"rack_percent": cap, "cluster_percent": cap}
    data["guid_locks"]["switches"] = {"leaf-su01-r1": "0x0002c90300aa0002"}
    old = index_of(data)
    for name in chosen:
        _EDITS[name](data)
    new = index_of(data)
    plan = change_plan(old, new, "inventories/lab", "lab")
    assert verify(plan, old, new) == [], chosen
    assert plan.empty == (not chosen)
