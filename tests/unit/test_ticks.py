"""util/ticks and the CLI's `ticked` bar (lab up's progress, issue #26 item 3): the total grows as work is
learned, never below what is done; on a terminal a bar, piped nothing."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from clusterforge.cli import console
from clusterforge.cli import progress as cli_progress
from clusterforge.util.ticks import Ticks


def test_ticks_tell_done_and_total() -> None:
    told: list[tuple[str, int, int]] = []
    t = Ticks(lambda note, done, total: told.append((note, done, total)))
    t.expect(2)
    t.tick("image ready")
    t.expect(1)
    t.tick("gpu01 running")
    t.tick("sm01 running")
    t.tick("one more than expected")
    assert told == [("image ready", 1, 2), ("gpu01 running", 2, 3), ("sm01 running", 3, 3),
                    ("one more than expected", 4, 4)]
    Ticks().tick("nobody told")  # no teller: nothing happens, nothing breaks


def test_ticked_is_a_bar_on_a_terminal_and_silent_piped(monkeypatch: pytest.MonkeyPatch) -> None:
    tty = io.StringIO()
    monkeypatch.setattr(console, "err", Console(file=tty, force_terminal=True, width=160))
    with cli_progress.ticked("lab up lab") as ticks:
        ticks.expect(2)
        ticks.tick("gpu01 running")
        ticks.tick("sm01 running")
    assert "lab up lab" in tty.getvalue() and "2/2" in tty.getvalue()
    piped = io.StringIO()
    monkeypatch.setattr(console, "err", Console(file=piped, force_terminal=False, width=160))
    with cli_progress.ticked("lab up lab") as ticks:
        ticks.expect(1)
        ticks.tick("gpu01 running")
    assert piped.getvalue() == ""
