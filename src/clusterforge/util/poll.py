"""Wait until nothing is left waiting: the lab's settle loops (ports Active after a heal, Slurm's nodes up)."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(waiting: Callable[[], list[str]], timeout: float, interval: float,
               give_up: Callable[[list[str]], Exception]) -> None:
    """Call `waiting()` (what is not ready yet, in words) every `interval` seconds until it returns nothing;
    past `timeout`, raise `give_up(what was still waiting)`."""
    deadline = time.monotonic() + timeout
    while True:
        left = waiting()
        if not left:
            return
        if time.monotonic() >= deadline:
            raise give_up(left)
        time.sleep(interval)
