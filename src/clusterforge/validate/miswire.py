"""Cables that land on another port than declared: swaps, rotations, and single moves.

A seen link x-y is misplaced when x's declared cable goes to w != y. Following w to the link seen
there, and so on, either closes a cycle (2 links: a swap, k links: a rotation) or runs out (a cable
moved to a free port, or a chain). A cycle is read in the orientation where the moved ends (y) sit
on the fewest devices, switches first: that is where the technician stands. At each moved end sits
the cable declared for its far end x (the x ends did not move), so that is the label named there.
Linear in the misplaced links: every step is a dictionary lookup.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.cabling import Cable
from ..model.index import Index, PortKey
from ..model.place_text import cable_label, cable_text, device_floor, port_text, routes_text
from .findings import Finding, ids


@dataclass(frozen=True, slots=True)
class Seen:
    a: PortKey
    b: PortKey
    width: str
    speed: str
    lids: tuple[int | None, int | None] = (None, None)  # LIDs ibnetdiscover printed for a and b


@dataclass(frozen=True, slots=True)
class Step:
    x: PortKey  # the end that stayed
    y: PortKey  # the end that moved: it sits where x's cable should not be
    cable: Cable  # declared at x: the cable physically at y
    want: PortKey  # where y's plug belongs: the declared far end of x's cable


def other_end(cable: Cable, key: PortKey) -> PortKey:
    return cable.b.key if cable.a.key == key else cable.a.key


def miswired(index: Index, misplaced: list[Seen]) -> list[Finding]:
    out: list[Finding] = []
    if not misplaced:
        return out
    seen_at = {end: j for j, s in enumerate(misplaced) for end in (s.a, s.b)}
    done: set[int] = set()
    for i in range(len(misplaced)):
        if i in done:
            continue
        cycles = [c for c in (_follow(index, misplaced, seen_at, i, x, done) for x in (0, 1)) if c]
        if not cycles:
            continue
        steps, members = min(cycles, key=lambda c: _score(index, c[0]))
        done.update(members)
        first = min(range(len(steps)), key=lambda k: _order(steps[k].y))
        steps = steps[first:] + steps[:first]
        out.append(_cycle_finding(index, steps))
    for i, s in enumerate(misplaced):
        if i not in done:
            out.append(_one_miswire(index, s))
    return out


def _follow(
    index: Index, misplaced: list[Seen], seen_at: dict[PortKey, int], i: int, first_x: int, done: set[int]
) -> tuple[list[Step], list[int]] | None:
    """The cycle through link i with its end `first_x` (0: a, 1: b) as a fixed end, if it closes."""
    s = misplaced[i]
    x, y = (s.a, s.b) if first_x == 0 else (s.b, s.a)
    start_y = y
    steps: list[Step] = []
    members = [i]
    while True:
        cable = index.cable_at.get(x)
        if cable is None:
            return None
        want = other_end(cable, x)
        steps.append(Step(x, y, cable, want))
        if want == start_y:
            return (steps, members) if len(steps) >= 2 else None
        j = seen_at.get(want)
        if j is None or j in done or j in members:
            return None
        members.append(j)
        s = misplaced[j]
        x, y = (s.b, want) if s.a == want else (s.a, want)


def _score(index: Index, steps: list[Step]) -> tuple[int, int, int]:
    """Fewest devices (then switches before hosts, then fewest racks) on the moved side."""
    devices = {st.y[0] for st in steps}
    on_hosts = sum(1 for st in steps if st.y[1] is not None)
    racks = {index.places.get(d, (d, 0))[0] for d in devices}
    return (len(devices), on_hosts, len(racks))


def _order(key: PortKey) -> tuple[str, str, int]:
    return (key[0], key[1] or "", key[2])


def _ports_of(keys: list[PortKey]) -> str:
    """'leaf01 ports 1/2' when every port is on one switch, 'gpu01 mlx5_2/1 and mlx5_3/1' on one host,
    else each port in full."""
    devices = {k[0] for k in keys}
    if len(devices) == 1:
        if all(k[1] is None for k in keys):
            return f"{keys[0][0]} ports {'/'.join(str(k[2]) for k in keys)}"
        return f"{keys[0][0]} " + " and ".join(f"{k[1]}/{k[2]}" for k in keys)
    return " and ".join(port_text(k) for k in keys)


def _places(index: Index, devices: list[str]) -> str:
    return ", ".join(f"{d} in {device_floor(index, d)}" for d in dict.fromkeys(devices))


def _routes(index: Index, cables: list[Cable]) -> str:
    routes = routes_text(index, cables)
    return f"; the links ride {routes}" if routes else ""


def _cycle_finding(index: Index, steps: list[Step]) -> Finding:
    ys = [st.y for st in steps]
    xs = [st.x for st in steps]
    where = _ports_of(ys)
    reach = ", ".join(
        f"{port_text(st.y)} reaches {port_text(st.x)} (declared {port_text(other_end(index.cable_at[st.y], st.y))})"
        if st.y in index.cable_at
        else f"{port_text(st.y)} reaches {port_text(st.x)}"
        for st in steps
    )
    host_crossed = len({y[0] for y in ys}) == 1 and all(y[1] is not None for y in ys)
    details = tuple(
        f"at {port_text(st.y)}: cable {cable_label(st.cable)} (declared {port_text(st.x)} - {port_text(st.want)}): "
        f"move it to {port_text(st.want)}"
        for st in steps
    )
    labels = [cable_label(st.cable) for st in steps]
    if len(steps) == 2 and host_crossed:
        host = ys[0][0]
        subject = where
        message = f"the two cables of {host} {ys[0][1]} and {ys[1][1]} are crossed: {reach}" + _rail_note(
            index, steps
        )
        action = (
            f"swap the two cables at the host, {where}: {labels[0]} goes to {port_text(steps[0].want)}, "
            f"{labels[1]} to {port_text(steps[1].want)}"
        )
    elif len(steps) == 2:
        subject = " / ".join(port_text(x) for x in xs)
        names = f"{xs[0][0]} and {xs[1][0]}" if xs[0][0] != xs[1][0] else f"{port_text(xs[0])} and {port_text(xs[1])}"
        message = f"{names} are swapped on {where}: {reach}" + _rail_note(index, steps)
        action = f"swap cables {labels[0]} and {labels[1]} at {where}"
    else:
        subject = " / ".join(port_text(x) for x in xs)
        message = f"{len(steps)} cables are rotated on {where}: {reach}" + _rail_note(index, steps)
        action = (
            f"rotate the {len(steps)} cables at {where} back, each to the port its label names: "
            + "; ".join(f"{labels[k]} from {port_text(st.y)} to {port_text(st.want)}" for k, st in enumerate(steps))
        )
    action += _routes(index, [st.cable for st in steps])
    declared = [
        f"{port_text(st.y)} - {port_text(other_end(c, st.y))}"
        for st in steps
        if (c := index.cable_at.get(st.y)) is not None
    ]
    return Finding(
        "FAB-MISWIRED",
        "error",
        subject,
        message,
        expected=", ".join(declared),
        observed=", ".join(f"{port_text(st.y)} - {port_text(st.x)}" for st in steps),
        action=action,
        floor=f"at {_places(index, [y[0] for y in ys])}; far ends {_places(index, [x[0] for x in xs])}",
        inventory=("cables", index.cable_positions[steps[0].cable.id]),
        details=details,
        covers=tuple(port_text(k) for st in steps for k in (st.x, st.y)),
        # the ports as the subject names them: the moved ends first on a host's crossed pair, else the far ends
        **ids(*((*ys, *xs) if len(steps) == 2 and host_crossed else (*xs, *ys)), cable=steps[0].cable),
    )


def _rail_note(index: Index, steps: list[Step]) -> str:
    notes = [n for n in (_crosses_rails(index, st.x, st.y) for st in steps) if n]
    return f"; this crosses rails ({', '.join(dict.fromkeys(notes))})" if notes else ""


def _crosses_rails(index: Index, x: PortKey, y: PortKey) -> str:
    host, sw = (x, y) if x[1] is not None else (y, x)
    if host[1] is None or sw[1] is not None:
        return ""
    hca = index.hca(host[0], host[1])
    leaf = index.switches.get(sw[0])
    if hca is None or leaf is None or hca.rail is None or leaf.rail is None or hca.rail == leaf.rail:
        return ""
    return f"rail-{hca.rail} HCA on a rail-{leaf.rail} leaf"


def plane_crossing(index: Index, x: PortKey, y: PortKey) -> str:
    """Rail planes (`fabric.planes`): "rail 3 HCA reaches plane 5's leaf L" when the host end of x-y is on
    a rail of another plane than the leaf it reaches, else ""."""
    spec = index.inv.fabric
    rpp = spec.rails_per_plane if spec is not None else None
    if rpp is None:
        return ""
    host, sw = (x, y) if x[1] is not None else (y, x)
    if host[1] is None or sw[1] is not None:
        return ""
    hca = index.hca(host[0], host[1])
    leaf = index.switches.get(sw[0])
    if hca is None or leaf is None or hca.rail is None or leaf.rail is None or leaf.role != "leaf":
        return ""
    if hca.rail // rpp == leaf.rail // rpp:
        return ""
    return f"rail {hca.rail} HCA reaches plane {leaf.rail // rpp}'s leaf {leaf.name}"


def _one_miswire(index: Index, s: Seen) -> Finding:
    # Report from the end that has a declared cable, preferring the host end.
    for x, y in ((s.a, s.b), (s.b, s.a)):
        cable = index.cable_at.get(x)
        if cable is None:
            continue
        want = other_end(cable, x)
        note = _crosses_rails(index, x, y)
        plane = plane_crossing(index, x, y)
        return Finding(
            "FAB-PLANE" if plane else "FAB-MISWIRED",
            "error",
            port_text(x),
            (f"{plane} ({port_text(y)}): the cable is in another rail plane, another subnet; " if plane else "")
            + f"{port_text(x)} reaches {port_text(y)}, declared {port_text(want)} ({cable_label(cable)})"
            + (f"; this crosses rails ({note})" if note and not plane else ""),
            expected=port_text(want),
            observed=port_text(y),
            action=f"move {cable_text(index, cable)} from {port_text(y)} to {port_text(want)}",
            floor=(
                f"{port_text(x)} in {device_floor(index, x[0])}; plugged into {port_text(y)} in "
                f"{device_floor(index, y[0])}; belongs in {port_text(want)} in {device_floor(index, want[0])}"
            ),
            inventory=("cables", index.cable_positions[cable.id]),
            covers=(port_text(x), port_text(want)),
            **ids(x, want, cable=cable),
        )
    raise AssertionError("misplaced link without a declared end")  # guarded by the caller
