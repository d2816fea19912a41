"""The apply journal: what `clusterforge apply` has done of a plan, so that it resumes where it stopped.

It lives next to the plan file (`plan.json` -> `plan.json.journal`): a plan and its progress go
together, whichever machine or directory the plan is applied from, and the deploy record directory
may not exist before the first deploy. One JSON object per line, each appended and fsync'ed before
apply goes on (a crash leaves at most a torn last line, which is ignored):

    {"journal": 1, "plan": "<the plan's digest>", "created": ...}             first line: the binding
    {"n": 3, "event": "start", "when": ...}                                     a machine step begins
    {"n": 3, "event": "done", "how": "ran", "when": ..., "state": {...}}        it finished (rc 0)
    {"n": 4, "event": "done", "how": "confirmed", ...}                          a person confirmed it
    {"n": 5, "event": "failed", "rc": 2, "output": "...", "state": {...}}       it failed
    {"n": 7, "event": "done", "how": "ran", "when": ...}                        one of a parallel group
    {"n": 6, "event": "joined", "steps": [6, 7], "state": {...}}                the group's end

`state` is the inventory and deploy record digests after the step (the plan's own steps change
them: a deploy writes the record, learn writes guids.generated.yaml), against which the next run
checks that nothing else changed them. The steps of a parallel group run at the same time: each has its
`start` and `done` (or `failed`), written under a lock as they happen, and the state is read once, when the
whole group has ended (`joined`). A journal bound to another plan's digest is refused.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..util import jsonstate

VERSION = 1


class JournalError(Exception):
    """The journal cannot be used with this plan (another plan's, or unreadable)."""


def journal_path(plan_path: Path) -> Path:
    return plan_path.with_name(plan_path.name + ".journal")


@dataclass
class Journal:
    path: Path
    plan_digest: str
    entries: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def open(cls, path: Path, plan_digest: str) -> Journal:
        """The journal at `path` for the plan with `plan_digest` (empty if there is none yet)."""
        journal = cls(path, plan_digest)
        if not path.exists():
            return journal
        try:
            lines = jsonstate.read_bytes(path).decode("utf-8").splitlines()
        except OSError as exc:
            raise JournalError(f"{path}: {exc.strerror or exc}") from None
        except ValueError as exc:  # not a regular file, too large, not UTF-8
            raise JournalError(f"{path}: not an apply journal ({exc}); move the file away to start over") from None
        records = []
        for i, line in enumerate(lines):
            try:
                rec = jsonstate.loads(line)  # nested too deeply: not a journal line
                if not isinstance(rec, dict):
                    raise ValueError("not an object")
            except ValueError:
                if i == len(lines) - 1:
                    break  # torn by a crash mid-write: the step it recorded did not finish
                raise JournalError(f"{path}:{i + 1}: not a journal line; move the file away to start over") from None
            records.append(rec)
        if not records:
            return journal
        head = records[0]
        if head.get("journal") != VERSION or "plan" not in head:
            raise JournalError(f"{path}:1: not an apply journal")
        if head["plan"] != plan_digest:
            raise JournalError(f"{path} records the apply of another plan ({head['plan'][:19]}...); "
                               "move it away (or apply that plan)")
        journal.entries = records[1:]
        return journal

    def done(self) -> dict[int, dict[str, Any]]:
        """Finished steps by number."""
        return {int(e["n"]): e for e in self.entries if e.get("event") == "done"}

    def last(self) -> dict[str, Any] | None:
        return self.entries[-1] if self.entries else None

    def last_state(self) -> dict[str, Any] | None:
        """The state recorded by the newest entry that recorded one (after a finished or failed step)."""
        for e in reversed(self.entries):
            if isinstance(e.get("state"), dict):
                state: dict[str, Any] = e["state"]
                return state
        return None

    def interrupted(self) -> int | None:
        """The first step whose effects were not settled when apply stopped (a crash or Ctrl-C), or None:
        one that started and never ended, or one of a parallel group that finished while the group never
        did (its `done` carries no state; the group's `joined` entry records the state the group left)."""
        open_: dict[int, None] = {}
        unsettled: dict[int, None] = {}
        for e in self.entries:
            n = int(e.get("n", 0))
            if e.get("event") == "start":
                open_[n] = None
            elif e.get("event") in ("done", "failed"):
                open_.pop(n, None)
                if not isinstance(e.get("state"), dict):
                    unsettled[n] = None
            if isinstance(e.get("state"), dict):
                unsettled.clear()
        pending = [*open_, *unsettled]
        return min(pending) if pending else None

    def record(self, n: int, event: str, **data: Any) -> None:
        """Append one event (fsync'ed); safe from the threads of a parallel group."""
        with self._lock:
            entry = {"n": n, "event": event, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **data}
            if not self.path.exists() or self.path.stat().st_size == 0:
                self._append({"journal": VERSION, "plan": self.plan_digest, "created": entry["when"]}, new=True)
            self._append(entry)
            self.entries.append(entry)

    def _append(self, obj: dict[str, Any], new: bool = False) -> None:
        line = (json.dumps(obj, sort_keys=True) + "\n").encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            self._drop_torn_tail(fd)
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        if new:  # the file's name must survive a crash too
            dfd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)

    def _drop_torn_tail(self, fd: int) -> None:
        """A crash mid-write leaves a last line without its newline: cut it before appending."""
        size = os.fstat(fd).st_size
        if size == 0:
            return
        with self.path.open("rb") as fh:
            fh.seek(max(0, size - 1))
            if fh.read(1) == b"\n":
                return
            fh.seek(0)
            data = fh.read()
        os.ftruncate(fd, data.rfind(b"\n") + 1)
