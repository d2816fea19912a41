"""Disjoint sets (union-find): the one implementation of "which of these belong together".

Used for connected components wherever the code groups things that share something: leaves
that share nodes (Slurm's switches, the planner's pods), day-2 tasks that touch the same
device or host, HA groups that share a member. Path halving; no ranks (the sets are small and
the results are read through `groups`). Which member ends up as a set's root is unspecified.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)


class DisjointSets(Generic[T]):
    def __init__(self, items: Iterable[T] = ()) -> None:
        self.parent: dict[T, T] = {}
        for x in items:
            self.parent.setdefault(x, x)

    def find(self, x: T) -> T:
        """The root of x's set (x joins as a set of its own when new)."""
        parent = self.parent
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: T, b: T) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra

    def groups(self) -> list[list[T]]:
        """Every set, its members in the order they joined; sets in the order of their first member."""
        out: dict[T, list[T]] = {}
        for x in self.parent:
            out.setdefault(self.find(x), []).append(x)
        return list(out.values())
