"""Error types shared across the layers, and the command exit codes."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

Path = tuple[str | int, ...]


class ExitCode(IntEnum):
    OK = 0
    FAILURE = 1
    USAGE_OR_PARSE = 2
    INVALID_INVENTORY = 3
    FINDINGS = 4
    UNREACHABLE = 5
    INTERNAL = 70  # a bug in clusterforge caught by its own checks (a change plan the verifier refused)


def format_path(path: Path) -> str:
    """`("nodes", 3, "hcas", 1, "guid")` -> `nodes[3].hcas[1].guid`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.replace("_", "").replace("-", "").isalnum() and not part[:1].isdigit():
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out


@dataclass(frozen=True, slots=True)
class InventoryIssue:
    """One problem in an inventory, located in its files."""

    path: Path
    message: str
    file: str | None = None
    line: int | None = None  # 1-based
    col: int | None = None  # 1-based
    rule: str = "INV"

    def located(self, file: str | None, line: int | None, col: int | None) -> InventoryIssue:
        return InventoryIssue(self.path, self.message, file, line, col, self.rule)

    def __str__(self) -> str:
        where = self.file or "<inventory>"
        if self.line is not None:
            where += f":{self.line}:{self.col or 1}"
        dotted = format_path(self.path)
        return f"{where}: {dotted}: {self.message}" if dotted else f"{where}: {self.message}"


class InventoryInvalid(Exception):
    """The inventory has errors: `issues`, and `more` beyond those that were only counted."""

    def __init__(self, issues: list[InventoryIssue], more: int = 0) -> None:
        super().__init__(f"{len(issues) + more} inventory error(s)")
        self.issues = issues
        self.more = more
