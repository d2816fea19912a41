"""Disjoint sets: the groups are the connected components of the unions made."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from clusterforge.util.unionfind import DisjointSets


def test_groups_in_join_order() -> None:
    ds: DisjointSets[str] = DisjointSets(["a", "b", "c", "d", "e"])
    ds.union("d", "b")
    ds.union("e", "a")
    ds.union("b", "e")
    assert ds.groups() == [["a", "b", "d", "e"], ["c"]]
    assert ds.find("a") == ds.find("d") != ds.find("c")
    assert ds.find("new") == "new" and ds.groups()[-1] == ["new"]


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=60))
def test_groups_are_the_connected_components(edges: list[tuple[int, int]]) -> None:
    ds: DisjointSets[int] = DisjointSets()
    for a, b in edges:
        ds.union(a, b)
    # reference: grow each component by breadth-first search over the edges
    adj: dict[int, set[int]] = {}
    for a, b in edges:
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set()).add(a)
    seen: set[int] = set()
    expected = []
    for start in adj:
        if start in seen:
            continue
        comp, frontier = {start}, [start]
        while frontier:
            x = frontier.pop()
            for y in adj[x] - comp:
                comp.add(y)
                frontier.append(y)
        seen |= comp
        expected.append(comp)
    assert sorted(map(sorted, map(set, ds.groups()))) == sorted(map(sorted, expected))
