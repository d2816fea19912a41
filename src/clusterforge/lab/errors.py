"""Exceptions raised by the lab."""

from __future__ import annotations

from collections.abc import Sequence


class LabError(Exception):
    """Base class of every lab failure."""


class LabSpecError(LabError):
    """The LabSpec is invalid; ``problems`` lists every problem found."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("invalid lab spec:\n  " + "\n  ".join(self.problems))


class CommandError(LabError):
    """An external command failed or timed out."""

    def __init__(
        self, argv: Sequence[str], returncode: int | None, stdout: str, stderr: str, why: str
    ) -> None:
        self.argv = tuple(argv)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        tail = (stderr or stdout).strip().splitlines()[-5:]
        detail = ("\n    " + "\n    ".join(tail)) if tail else ""
        super().__init__(f"{why}: {' '.join(self.argv)}{detail}")


class FaultError(LabError):
    """A fault could not be injected or healed."""


class NetFileError(LabError):
    """The ibsim net file is not in the subset of the format the lab understands."""
