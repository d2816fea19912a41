"""The planner's one error: a design that cannot be built as asked, with what would work."""

from __future__ import annotations

from collections.abc import Sequence


class PlanError(Exception):
    """The spec cannot be turned into a correct folded Clos.

    `message` says what does not fit and why (with the numbers); `suggestions` are the
    nearest designs that do, each written as the spec change to make. `field`: the spec field at
    fault, when one is (`("infra_roles",)`): `check` names its line.
    """

    def __init__(self, message: str, suggestions: Sequence[str] = (), field: tuple[str, ...] = ()) -> None:
        self.message = message
        self.suggestions = tuple(suggestions)
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        if not self.suggestions:
            return self.message
        lines = "\n".join(f"  - {s}" for s in self.suggestions)
        return f"{self.message}\nnearest valid designs:\n{lines}"
