"""Wave packing for the change plan (day2/changeplan.py, step 2 and 3 of its docstring). Pure.

Units: tasks that share a slot, a port, a device put in or taken out, a trunk, a rack that comes or
goes, or an interrupted host are one unit; a host that only a deploy disrupts is a unit of its own.
Waves: units packed in order (floor order of their first rack) so that no wave holds two subnet
managers, both servers of a Lustre failover pair, or more compute than `deploy.max_drain` allows per
rack and per cluster (a unit that alone exceeds the cap goes alone, with a warning).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..util.unionfind import DisjointSets
from .ha import Groups
from .steps import Phase


@dataclass
class Task:
    phase: Phase
    rack: str | None
    subject: str
    action: str
    hosts: frozenset[str] = frozenset()  # hosts it interrupts: out of service before it
    keys: tuple[str, ...] = ()  # what it shares with other tasks (slot, port, device, trunk, rack)
    last: bool = False  # after the other tasks of its phase and rack (a rack taken out)


@dataclass
class Wave:
    tasks: list[Task] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)  # interrupted, in order found
    held: set[str] = field(default_factory=set)  # the same, as a set
    per_rack: dict[str, int] = field(default_factory=dict)  # compute drained, by rack
    compute: int = 0
    switches: list[str] = field(default_factory=list)  # switches flashed in this wave (one: day2/firmware.py)
    why: str | None = None  # why its hosts go out, when the wave says it for all (a switch's flash)


Unit = tuple[list[Task], list[str]]
"""Tasks that go together, and the interrupted hosts that go with them."""


def units(tasks: list[Task], interrupted: Iterable[str], rack_order: list[str],
          host_rack: Callable[[str], str]) -> list[Unit]:
    """The units, in floor order of their first rack (`rack_order`; `host_rack` places a host), task-less last."""
    hosts = list(interrupted)
    sets: DisjointSets[str] = DisjointSets()
    find, union = sets.find, sets.union
    for i, t in enumerate(tasks):
        me = f"task:{i}"
        find(me)
        for k in (*t.keys, *(f"host:{h}" for h in t.hosts)):
            union(me, k)
    for h in hosts:
        find(f"host:{h}")
    out: dict[str, Unit] = {}
    for i, t in enumerate(tasks):
        out.setdefault(find(f"task:{i}"), ([], []))[0].append(t)
    for h in hosts:
        out.setdefault(find(f"host:{h}"), ([], []))[1].append(h)
    order = {r: i for i, r in enumerate(rack_order)}

    def first(u: Unit) -> tuple[int, int]:
        racks = [order.get(t.rack or "", 1 << 30) for t in u[0]]
        racks += [order.get(host_rack(h), 1 << 30) for h in u[1]]
        return (0 if u[0] else 1, min(racks, default=1 << 30))

    return sorted(out.values(), key=first)


def pack_waves(units: list[Unit], g: Groups, interrupted: Iterable[str], warnings: list[str]) -> list[Wave]:
    """The units packed into waves, first fit; what the packing cannot keep apart goes to `warnings`."""
    waves: list[Wave] = []
    for tasks, hosts in units:
        compute = {h for h in hosts if h in g.compute_rack}
        sms = [h for h in hosts if h in g.sms]
        if len(sms) > 1 and len(g.sms) > 1:
            warnings.append(f"subnet managers {', '.join(sms)} are out together: one piece of work takes "
                            "them all out (the fabric has no standby meanwhile)")
        target = None
        for w in waves:
            if fits(g, w, compute, hosts):
                target = w
                break
        if target is None:
            target = Wave()
            waves.append(target)
            problem = g.within_caps(compute, forced_ok=False)
            if problem is not None:
                warnings.append(f"{problem}: one piece of work needs them out together")
        target.tasks += tasks
        target.hosts += hosts
        target.held.update(hosts)
        for h in compute:
            rack = g.compute_rack[h]
            target.per_rack[rack] = target.per_rack.get(rack, 0) + 1
        target.compute += len(compute)
    out = list(interrupted)
    for h in out:
        if h in g.unpaired:
            warnings.append(f"Lustre server {h} has no failover partner (lustre[].failover_pairs): "
                            "its targets are unavailable while it is out")
    if len(g.sms) == 1 and g.sms[0] in out:
        warnings.append(f"{g.sms[0]} is the only subnet manager: the fabric has none while it is out")
    return waves or [Wave()]


def fits(g: Groups, wave: Wave, compute: set[str], hosts: list[str]) -> bool:
    """Whether a unit (its `hosts`, the `compute` among them) may join `wave`."""
    held = wave.held
    if len(g.sms) > 1 and any(h in g.sms for h in hosts) and any(h in g.sms for h in held):
        return False
    if any(g.partner.get(h) in held for h in hosts):
        return False
    if not compute:
        return True
    added: dict[str, int] = {}
    for h in compute:
        added[g.compute_rack[h]] = added.get(g.compute_rack[h], 0) + 1
    if wave.compute + len(compute) <= g.cluster_cap and all(
            wave.per_rack.get(r, 0) + n <= g.cap_of(r) for r, n in added.items()):
        return True
    # over a cap: only as one indivisible piece of work (day2/ha.py)
    return any(compute <= grp and all(h in grp for h in held if h in g.compute_rack) for grp in g.forced)
