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
