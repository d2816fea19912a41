"""Declared links that are not seen: one finding per absent device, else one per link.

A switch that is off takes all its links with it, and the HCAs that hang only from it vanish too
(discovery cannot reach them). The unseen devices are grouped: an unseen device with a declared
link to a seen one is a root (it is itself missing); the unseen devices reachable only through
roots are behind them and listed under the nearest root. A root switch, or a host none of whose
HCAs is seen, with two or more links is one FAB-DEVICE-MISSING finding with its links as details;
every other missing link is its own FAB-MISSING (or FAB-PORT-DOWN when iblinkinfo says why).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from ..model.expect import ExpectedLink
from ..model.index import Index, PortKey
from ..model.place_text import cable_label, cable_text, device_floor, link_floor, port_text, route_text
from .findings import Finding, ids
from .identify import DeviceKey


@dataclass(frozen=True, slots=True)
class PortState:
    state: str  # "Down/Polling"
    physical: str  # "Polling", "Disabled", ...
    lid: int | None  # LID of the device that owns the port (a switch's LID), when seen


def absent_findings(
    index: Index, bound: set[DeviceKey], missing: list[ExpectedLink], down: dict[PortKey, PortState]
) -> list[Finding]:
    if not missing:
        return []
    out: list[Finding] = []
    grouped: set[int] = set()
    for finding, links in _device_groups(index, bound, missing):
        out.append(finding)
        grouped.update(e.index for e in links)
    for exp in missing:
        if exp.index not in grouped:
            out.append(_missing_link(index, exp, down))
    return out


def _device_groups(
    index: Index, bound: set[DeviceKey], missing: list[ExpectedLink]
) -> list[tuple[Finding, list[ExpectedLink]]]:
    links_of: dict[DeviceKey, list[ExpectedLink]] = {}
    for exp in missing:
        for k in (exp.a, exp.b):
            d = (k[0], k[1])
            if d not in bound:
                links_of.setdefault(d, []).append(exp)
    if not links_of:
        return []

    roots = {d for d, links in links_of.items() if any(_far(d, e) in bound for e in links)}
    owner = _nearest_root(links_of, roots)
    out: list[tuple[Finding, list[ExpectedLink]]] = []
    by_root: dict[DeviceKey, list[ExpectedLink]] = {}
    behind_of: dict[DeviceKey, list[DeviceKey]] = {}
    for d, root in owner.items():
        by_root.setdefault(root, []).extend(links_of[d])
        if d != root:
            behind_of.setdefault(root, []).append(d)
    hosts: dict[str, list[DeviceKey]] = {}
    for root in sorted(by_root, key=_key):
        links = list({e.index: e for e in by_root[root]}.values())
        behind = sorted(behind_of.get(root, ()), key=_key)
        if root[1] is None:
            if len(links) >= 2:
                out.append((_switch_missing(index, root[0], links, behind), links))
        else:
            hosts.setdefault(root[0], []).append(root)
    if hosts:
        cabled: dict[str, set[str]] = {}
        for key in index.cable_at:
            if key[1] is not None and key[0] in hosts:
                cabled.setdefault(key[0], set()).add(key[1])
        for host, hcas in sorted(hosts.items()):
            if any((host, h) in bound for h in cabled.get(host, ())):
                continue  # part of the host answers: its missing links are cable faults
            links = list({e.index: e for r in hcas for e in by_root[r]}.values())
            if len(links) >= 2:
                out.append((_host_missing(index, host, links), links))
    return out


def _far(d: DeviceKey, exp: ExpectedLink) -> DeviceKey:
    """The device at the other end of a link from d."""
    return (exp.b[0], exp.b[1]) if (exp.a[0], exp.a[1]) == d else (exp.a[0], exp.a[1])


def _key(d: DeviceKey) -> tuple[str, str]:
    return (d[0], d[1] or "")


def _nearest_root(links_of: dict[DeviceKey, list[ExpectedLink]], roots: set[DeviceKey]) -> dict[DeviceKey, DeviceKey]:
    """Each unseen device -> the root it is reached from first (multi-source BFS over unseen links).
    A group of unseen devices without any root (an island) takes its switches, else all, as roots."""
    owner: dict[DeviceKey, DeviceKey] = {}
    for seeds in _seed_sets(links_of, roots):
        todo = deque(seeds)
        for s in seeds:
            owner[s] = s
        while todo:
            d = todo.popleft()
            for e in links_of[d]:
                n = _far(d, e)
                if n in links_of and n not in owner:
                    owner[n] = owner[d]
                    todo.append(n)
    return owner


def _seed_sets(links_of: dict[DeviceKey, list[ExpectedLink]], roots: set[DeviceKey]) -> list[list[DeviceKey]]:
    seeds = [sorted(roots, key=_key)]
    reached: set[DeviceKey] = set(roots)
    todo = deque(roots)
    while todo:
        d = todo.popleft()
        for e in links_of[d]:
            n = _far(d, e)
            if n in links_of and n not in reached:
                reached.add(n)
                todo.append(n)
    for d in sorted(links_of, key=_key):
        if d in reached:
            continue
        island: list[DeviceKey] = []
        stack = [d]
        reached.add(d)
        while stack:
            c = stack.pop()
            island.append(c)
            for e in links_of[c]:
                n = _far(c, e)
                if n in links_of and n not in reached:
                    reached.add(n)
                    stack.append(n)
        switches = [c for c in island if c[1] is None]
        seeds.append(sorted(switches or island, key=_key))
    return seeds


def _link_line(index: Index, device: str, exp: ExpectedLink) -> str:
    own, other = (exp.a, exp.b) if exp.a[0] == device else (exp.b, exp.a)
    route = route_text(index, exp.cable)
    return (
        f"{port_text(own)} - {port_text(other)} ({device_floor(index, other[0])}): cable {cable_label(exp.cable)}"
        + (f", {route}" if route else "")
    )


def _covers(links: list[ExpectedLink]) -> tuple[str, ...]:
    return tuple(port_text(k) for e in links for k in (e.a, e.b))


def _switch_missing(index: Index, name: str, links: list[ExpectedLink], behind: list[DeviceKey]) -> Finding:
    where = device_floor(index, name)
    sw = index.switches[name]
    mgmt = f" ({sw.mgmt_ip})" if sw.mgmt_ip else ""
    own = [e for e in links if name in (e.a[0], e.b[0])]
    rest = [e for e in links if name not in (e.a[0], e.b[0])]
    unreachable = ""
    if behind:
        names = ", ".join(f"{d[0]} {d[1]}" if d[1] else d[0] for d in behind[:8])
        more = f" and {len(behind) - 8} more" if len(behind) > 8 else ""
        unreachable = f"; {len(behind)} device(s) reachable only through it are unseen too: {names}{more}"
    position = next(i for i, s in enumerate(index.inv.switches) if s.name == name)
    return Finding(
        "FAB-DEVICE-MISSING",
        "error",
        name,
        f"{name} ({where}) is not seen on the fabric: power, management, or the switch itself "
        f"(its {len(own)} links are not seen){unreachable}",
        expected=f"{sw.role} {name} with {len(own)} links",
        observed="not discovered",
        action=(
            f"go to {name} in {where}: check its power (PSU LEDs), its management port{mgmt} and its "
            "console; once it is up its links come back (listed below; a link still missing then is a cable)"
        ),
        floor=where,
        inventory=("switches", position),
        switch=name,
        details=tuple(_link_line(index, name, e) for e in own)
        + tuple(_link_line(index, e.a[0] if e.a[1] is None else e.b[0], e) + " (behind it)" for e in rest),
        covers=_covers(links),
    )


def _host_missing(index: Index, host: str, links: list[ExpectedLink]) -> Finding:
    where = device_floor(index, host)
    position = next(i for i, n in enumerate(index.inv.nodes) if n.name == host)
    hcas = sorted({k[1] for e in links for k in (e.a, e.b) if k[0] == host and k[1]})
    return Finding(
        "FAB-DEVICE-MISSING",
        "error",
        host,
        f"{host} ({where}) is not seen on the fabric: none of its {len(links)} HCA ports answers "
        f"({', '.join(hcas)})",
        expected=f"{len(links)} HCA links",
        observed="not discovered",
        action=(
            f"go to {host} in {where}: is it powered and booted, are its HCAs seated and up "
            "(`ibstat` on the host)? If it is up, check its cables (listed below)"
        ),
        floor=where,
        inventory=("nodes", position),
        host=host,
        details=tuple(_link_line(index, host, e) for e in links),
        covers=_covers(links),
    )


def _missing_link(index: Index, exp: ExpectedLink, down: dict[PortKey, PortState]) -> Finding:
    subject = f"{port_text(exp.a)} - {port_text(exp.b)}"
    floor = link_floor(index, exp.a, exp.b, exp.cable)
    at = exp.a if exp.a in down else exp.b if exp.b in down else None
    if at is not None:
        st = down[at]
        if st.physical == "Disabled":
            enable = (
                f"`ibportstate {st.lid} {at[2]} enable` (from the subnet-manager node)"
                if st.lid is not None
                else f"enable {port_text(at)} from the subnet manager (ibportstate with its LID)"
            )
            why = f"{port_text(at)} was shut (Disabled): {enable}"
        else:
            why = (
                f"{port_text(at)} is {st.physical}: no peer answers (cable unplugged or damaged, or the far "
                "end down)"
            )
        return Finding(
            "FAB-PORT-DOWN",
            "error",
            subject,
            f"{subject}: {port_text(at)} is {st.state}",
            expected="Active/LinkUp",
            observed=st.state,
            action=f"check {cable_text(index, exp.cable)}: {why}",
            floor=floor,
            inventory=("cables", exp.index),
            covers=(port_text(exp.a), port_text(exp.b)),
            **ids(exp.a, exp.b, cable=exp.cable),
        )
    ends = f"plugged at both ends, {port_text(exp.a)} in {device_floor(index, exp.a[0])} and {port_text(exp.b)} in " \
        f"{device_floor(index, exp.b[0])}"
    hosts = [k for k in (exp.a, exp.b) if k[1] is not None]
    if hosts:
        h = hosts[0]
        advice = f"; is {h[0]} powered and its HCA {h[1]} up (`ibstat` on the host)?"
    else:
        lanes = f" (lane group {exp.cable.lane_group})" if exp.cable.lane_group is not None else ""
        advice = "; both are switch ports: look at their link LEDs, reseat or swap the optics at each end" + (
            f", and check the trunk's lanes{lanes} at both patch panels" if exp.cable.trunk else ""
        )
    return Finding(
        "FAB-MISSING",
        "error",
        subject,
        f"{subject} is not seen on the fabric",
        expected=f"{exp.width} {exp.speed} link",
        observed="no link",
        action=f"check {cable_text(index, exp.cable)}: {ends}{advice}",
        floor=floor,
        inventory=("cables", exp.index),
        covers=(port_text(exp.a), port_text(exp.b)),
        **ids(exp.a, exp.b, cable=exp.cable),
    )
