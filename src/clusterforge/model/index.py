"""A resolved, read-only view of an Inventory: effective hardware and every port.

Built once (linear in the inventory's size) and shared by the checks, the planner,
the renderers and the validator, so none of them re-derives profiles or port tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from ..catalog import Catalog, catalog
from .addresses import Addresses, allocate
from .cabling import Cable, PatchPanel, Trunk
from .hardware import Hardware, Hca, Profile
from .inventory import Inventory
from .nodes import Node, Switch
from .site import Rack

PortKey = tuple[str, str | None, int]


@dataclass(frozen=True, slots=True)
class PortInfo:
    device: str
    hca: str | None
    port: int
    rate: str | None  # None: the switch model is unknown
    kind: str  # "switch" | "hca" | "dpu"

    def __str__(self) -> str:
        if self.hca is None:
            return f"{self.device}/{self.port}"
        return f"{self.device}/{self.hca}/{self.port}"


@dataclass
class Index:
    inv: Inventory
    cat: Catalog = field(default_factory=catalog)

    @cached_property
    def racks(self) -> dict[str, Rack]:
        return {r.name: r for r in self.inv.racks}

    @cached_property
    def profiles(self) -> dict[str, Profile]:
        return {p.name: p for p in self.inv.profiles}

    @cached_property
    def nodes(self) -> dict[str, Node]:
        return {n.name: n for n in self.inv.nodes}

    @cached_property
    def switches(self) -> dict[str, Switch]:
        return {s.name: s for s in self.inv.switches}

    @cached_property
    def switch_planes(self) -> dict[str, int]:
        """Rail planes (`fabric.planes`): switch -> its 0-based plane (a leaf by its rail, a rail-plane spine
        by its group); {} without two planes or more (one fabric)."""
        spec = self.inv.fabric
        if spec is None or spec.rails_per_plane is None:
            return {}
        out: dict[str, int] = {}
        for sw in self.inv.switches:
            if sw.role == "leaf" and sw.rail is not None:
                out[sw.name] = sw.rail // spec.rails_per_plane
            elif sw.role == "spine" and sw.group is not None:
                out[sw.name] = sw.group
        return out if len(set(out.values())) >= 2 else {}

    @cached_property
    def panels(self) -> dict[str, PatchPanel]:
        return {p.name: p for p in self.inv.patch_panels}

    @cached_property
    def trunks(self) -> dict[str, Trunk]:
        return {t.id: t for t in self.inv.trunks}

    @cached_property
    def hardware(self) -> dict[str, Hardware]:
        """Effective hardware of every node: the profile, with the node's own fields on top."""
        out: dict[str, Hardware] = {}
        empty = Hardware()
        for node in self.inv.nodes:
            base: Hardware = self.profiles.get(node.profile or "", empty)
            update = {
                k: getattr(node, k)
                for k in Hardware.model_fields  # a node may override each hardware field of its profile
                if getattr(node, k) is not None
            }
            hw = (
                base
                if not update
                else Hardware.model_construct(
                    **{**{k: getattr(base, k) for k in Hardware.model_fields}, **update}
                )
            )
            out[node.name] = hw
        return out

    def hca(self, node: str, name: str) -> Hca | None:
        hw = self.hardware.get(node)
        if hw is None:
            return None
        for hca in hw.hcas:
            if hca.name == name:
                return hca
        return None

    @cached_property
    def switch_ports(self) -> dict[str, tuple[int, str]]:
        """Port count and rate of every switch whose model is in the catalog."""
        out: dict[str, tuple[int, str]] = {}
        for sw in self.inv.switches:
            model = self.cat.switches.get(sw.model)
            if model is None:
                continue
            if sw.split and model.split is not None:
                out[sw.name] = (model.ports * model.split.ways, model.split.rate)
            else:
                out[sw.name] = (model.ports, model.rate)
        return out

    @cached_property
    def host_ports(self) -> dict[PortKey, PortInfo]:
        """Every HCA and DPU port of every node, keyed by (node, hca, port)."""
        out: dict[PortKey, PortInfo] = {}
        for name, hw in self.hardware.items():
            for hca in hw.hcas:
                for hp in hca.ports:
                    out[(name, hca.name, hp.port)] = PortInfo(name, hca.name, hp.port, hp.rate, "hca")
            for dpu in hw.dpus:
                for hp in dpu.ports:
                    out[(name, dpu.name, hp.port)] = PortInfo(name, dpu.name, hp.port, hp.rate, "dpu")
        return out

    def port(self, device: str, hca: str | None, port: int) -> PortInfo | None:
        """The declared port at (device, hca, port), or None when there is no such port."""
        if hca is not None:
            return self.host_ports.get((device, hca, port))
        sw = self.switch_ports.get(device)
        if sw is None or not 1 <= port <= sw[0]:
            return None
        return PortInfo(device, None, port, sw[1], "switch")

    def port_rate(self, device: str, hca: str | None, port: int) -> str | None:
        """The declared rate of a port (None when there is no such port): `port()` without the record."""
        if hca is not None:
            info = self.host_ports.get((device, hca, port))
            return info.rate if info is not None else None
        sw = self.switch_ports.get(device)
        return sw[1] if sw is not None and 1 <= port <= sw[0] else None

    @cached_property
    def addresses(self) -> Addresses:
        """Every node's management, BMC and IPoIB address (model/addresses.py), computed once."""
        return allocate(self)

    @cached_property
    def cable_rates(self) -> list[str | None]:
        """The rate each cable of `inv.cables` runs at: its slower end's (None when an end's is unknown)."""
        port_rate, slower = self.port_rate, self.cat.slower
        return [slower(port_rate(*c.a.key), port_rate(*c.b.key)) for c in self.inv.cables]

    @cached_property
    def places(self) -> dict[str, tuple[str, int]]:
        """(rack, U) of every node and switch, by name."""
        out = {n.name: (n.rack, n.u) for n in self.inv.nodes}
        out.update({s.name: (s.rack, s.u) for s in self.inv.switches})
        return out

    @cached_property
    def port_guid_locks(self) -> dict[PortKey, str]:
        """Port GUIDs learned from the built fabric (`guid_locks.ports`), by port."""
        return {ref.key: guid for ref, guid in self.inv.guid_locks.ports.items()}

    @cached_property
    def cable_at(self) -> dict[PortKey, Cable]:
        """The cable plugged into each port (first one wins; duplicates are a check error)."""
        out: dict[PortKey, Cable] = {}
        for cable in self.inv.cables:
            out.setdefault(cable.a.key, cable)
            out.setdefault(cable.b.key, cable)
        return out

    @cached_property
    def cables(self) -> dict[str, Cable]:
        """Every cable by its id (first one wins; a repeated id is a check error): how a finding's `cable`
        finds its cable again."""
        out: dict[str, Cable] = {}
        for cable in self.inv.cables:
            out.setdefault(cable.id, cable)
        return out

    @cached_property
    def cable_positions(self) -> dict[str, int]:
        """Each cable id's position in `inv.cables` (first one wins): its model path `("cables", k)`, which
        the source map turns into file:line."""
        out: dict[str, int] = {}
        for k, cable in enumerate(self.inv.cables):
            out.setdefault(cable.id, k)
        return out

    def switch_port_count(self, sw: Switch) -> int | None:
        """Logical ports of a switch (split ports counted twice); None for a model not in the catalog."""
        known = self.switch_ports.get(sw.name)
        return known[0] if known is not None else None
