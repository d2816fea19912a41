"""The `retire` component: what a host was deployed and the inventory no longer wants, taken away. Pure.

A deploy converges what is desired; alone it would take nothing away, and a node that stops being a subnet
manager would keep its OpenSM running (a second SM the inventory does not know), an HSM agent that is no
more its lhsmd. The deploy record (record.py) keeps, per host and component, what the component owns there
by name: services, files written whole, held packages. Against the host's whole desired state now (every
component, whatever a run selects), whatever of that is wanted by no component is retired, first in the
run: units stopped and disabled (the components in reverse deploy order, each one's units in reverse: a
Lustre mount before LNet, lhsmd before both), files removed, holds released (the packages stay installed:
removing one is a person's call). A run with `--component` retires what the components it names owned.

Without a record for the host (never deployed from here, or its lab container re-created) nothing is
retired, and the deploy says so when the inventory's plan would have had something to take away.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from typing import Any

from .component import RETIRE, Component, HostPlan
from .record import owned

RETIRE_ROOTS = ("/etc/", "/usr/local/")
"""The trees the deploy writes files in (configuration, its scripts): a file the record names outside them
is none the deploy wrote, and is never removed."""

KEPT = frozenset({"/etc/hosts", "/etc/passwd", "/etc/shadow", "/etc/group", "/etc/gshadow", "/etc/fstab",
                  "/etc/sudoers", "/etc/os-release", "/etc/hostname", "/etc/resolv.conf", "/etc/machine-id"})
"""Files a host cannot do without, never removed whatever a record says (the deploy edits /etc/hosts only as
a marked block, never writes it whole)."""


KEPT_TREES = ("/etc/firewalld/",)
"""Trees whose files are never retired: firewalld stops loading a zone that names a service whose file is gone."""


def _safe_path(path: str) -> bool:
    """A file the record names is one the deploy wrote: an absolute, normal path in a tree the deploy writes
    (never `/`, never `..`, never a file the host cannot do without); anything else in a record is not
    removed."""
    return (path.startswith(RETIRE_ROOTS) and posixpath.normpath(path) == path and path not in KEPT
            and not path.startswith(KEPT_TREES)
            and not any(ord(c) < 0x20 or c == "\x7f" for c in path))


def retire_component(full: HostPlan, recorded: Mapping[str, Any], order: Iterable[str],
                     selection: frozenset[str] | None = None) -> Component | None:
    """What to take away on the host of `full` (its whole desired state), from what `recorded` (component ->
    record entry) says it owns; `order`: the components in deploy order; `selection`: the components a run
    names (None: all). None when there is nothing to retire."""
    wants = [owned(c) for c in full.components]  # what each component owns, as the record keeps it
    services = {s for w in wants for s in w["services"]}
    files = {f for w in wants for f in w["files"]}
    holds = {p for w in wants for p in w["holds"]}
    wanted = {c.name for c in full.components}
    ranked = [n for n in reversed(list(order)) if n in recorded]
    ranked += sorted(n for n in recorded if n not in ranked)
    stop: list[str] = []
    remove: list[str] = []
    unhold: list[str] = []
    retires: list[str] = []
    for name in ranked:
        entry = recorded[name]
        if name == RETIRE or (selection is not None and name not in selection) or not isinstance(entry, dict):
            continue  # a version 1 entry (a digest only) owns nothing by name
        stop += [u for u in reversed(_names(entry, "services")) if u not in services and u not in stop]
        remove += [f for f in _names(entry, "files") if f not in files and f not in remove and _safe_path(f)]
        unhold += [p for p in _names(entry, "holds") if p not in holds and p not in unhold]
        if name not in wanted:
            retires.append(name)
    if not (stop or remove or unhold or retires):
        return None
    return Component(RETIRE, stop=tuple(stop), remove=tuple(remove), unhold=tuple(unhold), retires=tuple(retires),
                     package_manager=full.package_manager)


def _names(entry: Mapping[str, Any], key: str) -> list[str]:
    value = entry.get(key, [])
    return [x for x in value if isinstance(x, str)] if isinstance(value, list) else []
