"""Address allocation over random sequences of edits to the lab inventory, each followed by a
`plan --write` (the frozen file rewritten): a node that stays keeps every address it had, no
address is given twice, a node added in the same edit as another leaves never gets the leaver's
address while a never-used one is left, and rewriting converges."""

from __future__ import annotations

import random
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cf_lab_inventory import index_of, lab_data
from clusterforge.inventory import addresses_file
from clusterforge.model.addresses import Addresses

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
POOLS = ("mgmt", "bmc", "ib0", "ib1")


def _table(addrs: Addresses, names: list[str]) -> dict[tuple[str, str], int]:
    return {(n, p): ip for n in names for p in POOLS if (ip := addrs.get(n, p)) is not None}


def _write(data: dict[str, Any]) -> tuple[dict[str, Any], str]:
    index = index_of(data)
    text = addresses_file.render(index, index.addresses)
    return {**data, "allocations": yaml.safe_load(text)["allocations"]}, text


@st.composite
def edits(draw: st.DrawFn) -> list[tuple[list[int], int, int]]:
    """Each step: positions to remove (of the current list), nodes to add, a shuffle seed."""
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        removed = draw(st.lists(st.integers(0, 30), max_size=3, unique=True))
        steps.append((removed, draw(st.integers(0, 3)), draw(st.integers(0, 2**16))))
    return steps


@FAST
@given(edits())
def test_staying_nodes_keep_their_addresses(steps: list[tuple[list[int], int, int]]) -> None:
    data, _ = _write(lab_data())
    serial = 0
    for removed, added, seed in steps:
        before = index_of(data).addresses
        nodes = list(data["nodes"])
        previous = {n["name"] for n in nodes}
        gone = {nodes[i]["name"] for i in removed if i < len(nodes)}
        nodes = [n for n in nodes if n["name"] not in gone]
        for _ in range(added):
            serial += 1
            nodes.append({"name": f"new{serial:03d}", "rack": "lab-su02-r01", "u": 30, "profile": "gpu-node"})
        random.Random(seed).shuffle(nodes)  # list order must not matter
        data = {**data, "nodes": nodes}
        after = index_of(data).addresses
        names = [n["name"] for n in nodes]
        stay = [n for n in names if n in previous]
        assert _table(after, stay) == _table(before, stay)
        every = list(_table(after, names).values())
        assert len(every) == len(set(every))
        leavers = set(_table(before, sorted(gone)).values())
        newcomers = [n for n in names if n not in previous]
        assert not leavers & set(_table(after, newcomers).values())
        assert not after.issues
        data, text = _write(data)
        assert _write(data)[1] == text  # converges
