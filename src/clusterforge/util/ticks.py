"""Progress of work whose size is learned as it goes (a lab's bring-up: its image, then each host, the
simulator, OpenSM): `expect(n)` more units, `tick(note)` one done. The teller (a progress bar, at the edge)
gets (note, done, total); without one, nothing is told."""

from __future__ import annotations

from collections.abc import Callable


class Ticks:
    def __init__(self, tell: Callable[[str, int, int], None] | None = None) -> None:
        self.done = 0
        self.total = 0
        self._tell = tell

    def expect(self, n: int) -> None:
        self.total += n

    def tick(self, note: str = "") -> None:
        self.done += 1
        self.total = max(self.total, self.done)
        if self._tell is not None:
            self._tell(note, self.done, self.total)
