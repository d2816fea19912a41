"""The one timing helper of the benches: the best wall-clock seconds of a few runs."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(fn: Callable[[], object], runs: int = 3) -> float:
    """The fastest of `runs` calls of `fn`, in seconds (the least disturbed by the rest of the machine)."""
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
