"""A real deploy to real hosts is deliberate: shown first, then confirmed (pure; the CLI does the I/O).

    needs_confirmation(lab=False, dry_run=False, yes=False)  -> True
    refusal("prod", 278, tty=False)                          -> the message; exit 2 before any connection
    prompt("prod", results)                                   -> "deploy 812 change(s) to 278 host(s) of prod?"

A lab (containers on the lab network) and a dry run (reads state over SSH, changes nothing) need no
confirmation; `--yes` (CONFIRM=1 in make) gives it up front for scripts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .runner import HostResult


def needs_confirmation(*, lab: bool, dry_run: bool, yes: bool) -> bool:
    """Only a real run against the inventory's own hosts, not already confirmed with --yes."""
    return not lab and not dry_run and not yes


def refusal(env_name: str, hosts: int, *, tty: bool) -> str | None:
    """Why the run cannot be confirmed here (no terminal to ask on), or None when it can be asked."""
    if tty:
        return None
    return (f"a real deploy to {env_name} ({hosts} host(s)) must be confirmed: run it in a terminal to see what "
            "will change and answer, or pass --yes (CONFIRM=1 with make) from a script. Nothing was contacted; "
            "--dry-run shows the changes without making them")


def prompt(env_name: str, results: Sequence[HostResult]) -> str:
    """The question after the dry run: the environment, the hosts, and what will change."""
    changes = sum(len(r.changes) for r in results)
    touched = sum(1 for r in results if r.changes)
    kinds = Counter(c.kind for r in results for c in r.changes)
    what = ", ".join(f"{n} {k}(s)" for k, n in sorted(kinds.items())) or "nothing"
    bad = sum(1 for r in results if r.failed)
    warn = f"; {bad} host(s) could not be read (see above)" if bad else ""
    return (f"deploy to {env_name}: {len(results)} host(s), {changes} change(s) on {touched} host(s) "
            f"({what}){warn}. Apply?")
