"""Find the slow member of a node set by halves (docs/accept.md): a multi-node all_reduce below its bound.

Each round runs the all_reduce on both halves of the suspect set at once (they share no node, and in a
fat tree at full bisection no link either); the half below the bound is the new suspect set. A set of N
nodes takes ceil(log2 N) rounds to a single node, and one more to confirm it against a known-good
partner: 64 nodes, 7 rounds. A half that is fast while the whole was slow means the slow part is between
the halves (an uplink, a spine), and the search says so instead of blaming a node.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Bisection:
    suspect: tuple[str, ...]
    """One node when found; the last set whose halves were both fast (the slow part is between them)."""
    rounds: int
    between_halves: bool


def halves(nodes: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    ordered = tuple(nodes)
    mid = (len(ordered) + 1) // 2
    return ordered[:mid], ordered[mid:]


def halves_plan(nodes: Sequence[str]) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """The first round's halves, then the sizes every later round will have (the suspect half is not
    known before the round runs): what a finding prints as the plan."""
    out = []
    current = tuple(nodes)
    while len(current) > 1:
        a, b = halves(current)
        out.append((a, b))
        current = a
    return out


def bisect(nodes: Sequence[str], slow: Callable[[tuple[str, ...]], bool],
           confirm: Callable[[str], bool] | None = None) -> Bisection:
    """Run the search with `slow(node set)` as the measurement (True: below the bound)."""
    suspect = tuple(nodes)
    rounds = 0
    while len(suspect) > 1:
        a, b = halves(suspect)
        rounds += 1
        slow_a, slow_b = slow(a), slow(b)  # one round: both halves at once
        if slow_a == slow_b:
            if not slow_a:
                return Bisection(suspect, rounds, True)
            return Bisection(suspect, rounds, False)  # both slow: more than one member (or a shared part)
        suspect = a if slow_a else b
    if confirm is not None:
        rounds += 1
        if not confirm(suspect[0]):
            return Bisection(suspect, rounds, True)
    return Bisection(suspect, rounds, False)
