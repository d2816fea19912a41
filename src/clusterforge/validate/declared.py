"""Write the declared-fabric cache that validate.quick reads (see there): from a loaded, checked environment.

`fast` is set only when the full validator finds the declared fabric itself, as our simulator prints it
(sim/ibnetdiscover.py), clean: what quick's proof assumes of the inventory (no FAB-RAIL on a declared
link, every declared device nameable) is then established by the validator, not by a second copy of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..model.expect import expected_links
from ..model.index import Index
from ..util.fsutil import write_atomic
from .identify import DeviceKey, locked_guids
from .quick import CACHE_FORMAT, cache_enabled, cache_path, cache_text, inventory_key, link_key, read_cache


def _name(key: DeviceKey) -> str:
    """The device as ibnetdiscover describes it: the switch's name, "<host> <hca>" for an HCA."""
    return key[0] if key[1] is None else f"{key[0]} {key[1]}"


def declared_fabric(index: Index, key: str) -> dict[str, Any]:
    links = {}
    for exp in expected_links(index).values():
        (a, ah, ap), (b, bh, bp) = exp.a, exp.b
        links[link_key((_name((a, ah)), ap), (_name((b, bh)), bp))] = f"{exp.width} {exp.speed}"
    return {
        "format": CACHE_FORMAT,
        "key": key,
        "fast": _clean_as_simulated(index),
        "switches": sorted(index.switches),
        "hcas": sorted(f"{n} {h.name}" for n in index.nodes for h in index.hardware[n].hcas),
        "locks": [[_name(k), g] for k, g in locked_guids(index).items()],
        "links": links,
    }


def _clean_as_simulated(index: Index) -> bool:
    from ..collect.store import Observations
    from ..sim.ibnetdiscover import from_index, render
    from .run import validate

    try:
        text = render(index, from_index(index))
    except (KeyError, ValueError, LookupError):  # a fabric the simulator cannot draw: no fast path for it
        return False
    report = validate(index, Observations(fabric={"ibnetdiscover": text}), fabric_only=True)
    return not report.findings and report.fabric_checked


def key_before_load(env: Path) -> str | None:
    """The cache key of `env`'s files as they are now, taken before loading them (so an edit made while
    loading makes the cache written afterwards stale, never wrong); None when the cache is off or the
    environment unreadable (loading then says what is wrong)."""
    if not cache_enabled():
        return None
    try:
        return inventory_key(env)
    except OSError:
        return None


def refresh(env: Path, index: Index, key: str) -> bool:
    """Write `env`'s declared-fabric cache unless the one there is current; True when it was written.
    `key` is `inventory_key(env)` taken before `index` was loaded (a file changed since makes it stale, never
    wrong). An unwritable state directory is not an error of `validate` (the next run is only slower)."""
    if not cache_enabled():
        return False
    try:
        if read_cache(env, key) is not None or inventory_key(env) != key:
            return False  # current already, or a file changed while it was loaded
        write_atomic(cache_path(env), cache_text(declared_fabric(index, key)))
    except OSError:
        return False
    return True
