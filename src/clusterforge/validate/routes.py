"""The built fabric's routes on the declared cables (issue #36; docs/accept.md, "Routes"): the unicast forwarding
tables the subnet manager programmed (parse.ibroute: ibroute per switch, dump_fts, or OpenSM's opensm-lfts.dump)
resolved through the GUIDs (learned where locked, declared, else the render's placeholders, which the lab's
simulated fabric carries) onto the inventory's switches and HCA ports, so that a route step is a cable id.

`resolve` binds each table to its declared switch and each CA port to its LID; `path` follows a flow from one HCA
port to another, switch by switch, by the out port each table gives the destination's LID, and returns the
cables it crosses; `uplinks` are the switch-to-switch cables a plan must cover. Everything that does not fit
the declaration (a table of an undeclared GUID, a route out of an undeclared port, a LID of two ports, a loop)
is a problem in words, never a silently shorter path. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from ..model.index import Index, PortKey
from ..parse.ibroute import NO_ROUTE, SwitchLft, Tables, compact
from ..render import GuidBook, guid_text

MAX_HOPS = 16
"""More switches than any fat tree has (a three-tier path crosses five): a route this long loops."""

CaPort = tuple[str, str, int]


class LidTable(Mapping[int, int]):
    """One switch's table as a mapping, destination LID -> out port, over its compact bytes (parse.ibroute.Lft):
    a byte a LID, so that 1,570 switches' tables of 18,000 LIDs are 28 MB, not gigabytes of dicts."""

    __slots__ = ("ports",)

    def __init__(self, ports: bytes) -> None:
        self.ports = ports

    def __getitem__(self, lid: int) -> int:
        if 0 <= lid < len(self.ports) and (port := self.ports[lid]) != NO_ROUTE:
            return port
        raise KeyError(lid)

    def get(self, lid: int, default: int | None = None) -> int | None:  # type: ignore[override]
        if 0 <= lid < len(self.ports) and (port := self.ports[lid]) != NO_ROUTE:
            return port
        return default

    def __contains__(self, lid: object) -> bool:
        return isinstance(lid, int) and 0 <= lid < len(self.ports) and self.ports[lid] != NO_ROUTE

    def __iter__(self) -> Iterator[int]:
        return (lid for lid, port in enumerate(self.ports) if port != NO_ROUTE)

    def __len__(self) -> int:
        return len(self.ports) - self.ports.count(NO_ROUTE)

    def out_ports(self) -> set[int]:
        """Every port some LID leaves by."""
        return set(self.ports) - {NO_ROUTE}

    def sent_out(self, port: int) -> list[int]:
        """The LIDs sent out of `port`, in order."""
        out, at = [], self.ports.find(port)
        while at >= 0:
            out.append(at)
            at = self.ports.find(port, at + 1)
        return out


@dataclass(frozen=True)
class Routes:
    lft: dict[str, LidTable]
    """Declared switch -> {destination LID: the port it forwards that LID out of}."""
    lid: dict[CaPort, int]
    """Declared HCA port (node, hca, port) -> its LID, as the tables name their destinations."""
    problems: tuple[str, ...] = field(default=())
    """What in the tables matched no declared device, or disagreed with itself."""

    def label(self, key: CaPort) -> str:
        return f"{key[0]} {key[1]}/{key[2]}"


def resolve(index: Index, guids: GuidBook, tables: Tables | Iterable[SwitchLft]) -> Routes:
    """The tables bound to the inventory: switches and CA ports by GUID (records are made compact first)."""
    if not isinstance(tables, Tables):
        tables = compact(tables)
    switch_of = {guid_text(g): name for name, g in guids.switches.items()}
    port_of = {guid_text(g): key for key, g in guids.ca_ports.items()}
    lft: dict[str, LidTable] = {}
    problems: list[str] = []
    for table in tables.switches:
        name = switch_of.get(table.guid)
        if name is None:
            problems.append(f"the table of switch {table.guid} ({table.name}) is of no declared switch's GUID")
            continue
        if name in lft:
            problems.append(f"two tables of {name} ({table.guid}): the input holds a switch twice")
            continue
        lft[name] = LidTable(table.ports)
    # each CA port at the LID the tables name it by: the first table's word for each LID, then the others'
    lid: dict[CaPort, int] = {}
    named = [(n, d, tables.first[n]) for n, d in tables.dests.items()]
    named += [(n, d, t.name) for t in tables.switches for n, d in t.other.items()]
    for number, dest, where in named:
        key = port_of.get(dest.guid)
        if dest.kind != "Channel Adapter" or key is None:
            continue
        seen = lid.setdefault(key, number)
        if seen != number:
            problems.append(f"{key[0]} {key[1]}/{key[2]} ({dest.guid}) is LID {seen} in one table and {number} "
                            f"in {where}'s: the tables are of different sweeps")
    return Routes(lft, lid, tuple(problems))


def path(index: Index, routes: Routes, src: CaPort, dst: CaPort) -> tuple[list[str], str | None]:
    """The cable ids a flow from `src` to `dst` crosses, in order, and None; or the cables up to where it
    cannot be followed and why."""
    dlid = routes.lid.get(dst)
    if dlid is None:
        return [], f"{routes.label(dst)}: no table routes it (its LID is unknown)"
    cables: list[str] = []
    at: PortKey = src
    for _ in range(MAX_HOPS + 1):
        cable = index.cable_at.get(at)
        if cable is None:
            return cables, f"{_port(at)}: no declared cable (the route leaves by a port the inventory does not cable)"
        cables.append(cable.id)
        far = cable.b if cable.a.key == at else cable.a
        if far.hca is not None:
            if (far.device, far.hca, far.port) == dst:
                return cables, None
            return cables, f"cable {cable.id} ends at {_port(far.key)}, not at {routes.label(dst)}"
        table = routes.lft.get(far.device)
        if table is None:
            return cables, f"{far.device}: no forwarding table in the input"
        out = table.get(dlid)
        if out is None:
            return cables, f"{far.device} does not route LID {dlid} ({routes.label(dst)})"
        if out == 0:
            return cables, f"{far.device} delivers LID {dlid} to itself, not to {routes.label(dst)}"
        at = (far.device, None, out)
    return cables, f"more than {MAX_HOPS} switches from {routes.label(src)} to {routes.label(dst)}: a loop"


def _port(key: PortKey) -> str:
    return f"{key[0]}/{key[2]}" if key[1] is None else f"{key[0]} {key[1]}/{key[2]}"


def uplinks(index: Index) -> list[str]:
    """The ids of every cable between two switches (leaf-spine, spine-core): what node-leaf tests cannot cross."""
    return sorted(c.id for c in index.inv.cables
                  if c.a.hca is None and c.b.hca is None and c.a.device in index.switches
                  and c.b.device in index.switches)


def idle_uplinks(index: Index, routes: Routes) -> list[str]:
    """Switch-to-switch cables that no route uses in either direction (a link the SM routes around: dead, or
    not there): each switch's table is read for the port at each end."""
    used: set[tuple[str, int]] = {(sw, port) for sw, table in routes.lft.items() for port in table.out_ports()}
    out = []
    for cid in uplinks(index):
        cable = index.cables[cid]
        if (cable.a.device, cable.a.port) not in used and (cable.b.device, cable.b.port) not in used:
            out.append(cid)
    return out


def tier(index: Index, device: str) -> int:
    """A device's tier: a node -1, a leaf 0, a spine 1, a core 2."""
    sw = index.switches.get(device)
    return {"leaf": 0, "spine": 1, "core": 2}.get(sw.role, 3) if sw is not None else -1


def hosts_below(index: Index) -> dict[str, set[tuple[str, str, int]]]:
    """Each switch -> the HCA ports beneath it (cabled to it, or to a switch of a lower tier beneath it)."""
    direct: dict[str, set[tuple[str, str, int]]] = {s: set() for s in index.switches}
    lower: dict[str, set[str]] = {s: set() for s in index.switches}
    for c in index.inv.cables:
        for here, far in ((c.a, c.b), (c.b, c.a)):
            if here.hca is None and here.device in index.switches:
                if far.hca is not None:
                    direct[here.device].add((far.device, far.hca, far.port))
                elif far.device in index.switches and tier(index, far.device) < tier(index, here.device):
                    lower[here.device].add(far.device)
    out: dict[str, set[tuple[str, str, int]]] = {}
    for s in sorted(index.switches, key=lambda n: tier(index, n)):  # lower tiers first
        out[s] = set(direct[s]).union(*(out.get(x, set()) for x in lower[s]))
    return out
