"""Every GUID the rendered files name: declared or learned where known, placeholders elsewhere.

Precedence: `guid_locks` (learned from the built fabric) over GUIDs declared on the
switch/HCA, over a placeholder. Placeholders are deterministic (a hash of the device
name, so a re-render gives the same bytes) and recognizable: they start with
`0x02cf` (the `02` marks a locally administered EUI-64, `cf` is clusterforge):

    switch node GUID   0x02cf53 + 40 hash bits            (53 = "S")
    CA node GUID       0x02cf48 + 36 hash bits + 0x0       (48 = "H")
    CA port GUID       CA placeholder node GUID + port number

A CA port placeholder is its node placeholder plus the port number: the same rule
ibsim uses for the GUIDs it assigns, so a simulated fabric shows the rendered GUIDs.
Placeholders are labelled like the inventory refers to the device: `leaf01`,
`gpu01/mlx5_0` (node GUID), `gpu01/mlx5_0/1` (port GUID).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from ..model.index import Index
from ..util.guid import format_guid

PLACEHOLDER_PREFIX = 0x02CF
_SWITCH_TAG = 0x53
_CA_TAG = 0x48
_MASK40 = (1 << 40) - 1
_MASK36 = (1 << 36) - 1


def placeholder_switch_guid(name: str, salt: int = 0) -> int:
    """The placeholder node GUID of switch `name`."""
    return (PLACEHOLDER_PREFIX << 48) | (_SWITCH_TAG << 40) | (_hash(name, salt) & _MASK40)


def placeholder_ca_guid(node: str, ca: str, salt: int = 0) -> int:
    """The placeholder node GUID of CA `ca` (an HCA or DPU) of `node`; its low 4 bits are 0."""
    return (PLACEHOLDER_PREFIX << 48) | (_CA_TAG << 40) | ((_hash(f"{node}/{ca}", salt) & _MASK36) << 4)


def is_placeholder(guid: int) -> bool:
    return guid >> 48 == PLACEHOLDER_PREFIX


def fmt(guid: int) -> str:
    """`0x` + 16 lower-case hex digits, the form OpenSM and the diags print."""
    return format_guid(guid)


def _hash(text: str, salt: int) -> int:
    data = text if salt == 0 else f"{text}#{salt}"
    return int.from_bytes(hashlib.sha256(data.encode("utf-8")).digest()[:8], "big")


@dataclass(frozen=True)
class GuidBook:
    """Node GUIDs of switches and CAs, port GUIDs of CA ports, and which are placeholders."""

    switches: dict[str, int] = field(default_factory=dict)
    ca_nodes: dict[tuple[str, str], int] = field(default_factory=dict)
    ca_ports: dict[tuple[str, str, int], int] = field(default_factory=dict)
    placeholders: frozenset[str] = frozenset()

    def switch(self, name: str) -> int:
        return self.switches[name]

    def ca(self, node: str, ca: str) -> int:
        return self.ca_nodes[(node, ca)]

    def port(self, node: str, ca: str, port: int) -> int:
        return self.ca_ports[(node, ca, port)]

    def unknown(self, labels: list[str]) -> tuple[str, ...]:
        """The labels among `labels` whose GUID is a placeholder, sorted, without repeats."""
        return tuple(sorted({label for label in labels if label in self.placeholders}))


def build_guids(index: Index, cas: list[tuple[str, str, tuple[int, ...]]]) -> GuidBook:
    """Resolve every GUID of the switches and of `cas` ((node, ca name, IB ports) each)."""
    inv = index.inv
    locks = inv.guid_locks
    lock_ca = {(ref.device, ref.hca): int(g, 16) for ref, g in locks.hcas.items()}
    lock_port = {ref.key: int(g, 16) for ref, g in locks.ports.items()}
    declared_ca: dict[tuple[str, str], int] = {}
    declared_port: dict[tuple[str, str | None, int], int] = {}
    shapes: dict[int, tuple[list[tuple[str, int]], list[tuple[str, int, int]]]] = {}
    for node, hw in index.hardware.items():
        shape = shapes.get(id(hw))  # nodes of one profile share their Hardware: read it once
        if shape is None:
            shape = shapes[id(hw)] = (
                [(hca.name, int(hca.node_guid, 16)) for hca in hw.hcas if hca.node_guid],
                [(name, hp.port, int(hp.guid, 16))
                 for name, ports in [(h.name, h.ports) for h in hw.hcas] + [(d.name, d.ports) for d in hw.dpus]
                 for hp in ports if hp.guid])
        for name, value in shape[0]:
            declared_ca[(node, name)] = value
        for name, port, value in shape[1]:
            declared_port[(node, name, port)] = value

    known: set[int] = set()
    switches: dict[str, int] = {}
    ca_nodes: dict[tuple[str, str], int] = {}
    ca_ports: dict[tuple[str, str, int], int] = {}
    todo_sw: list[str] = []
    todo_ca: list[tuple[str, str]] = []
    todo_port: list[tuple[str, str, int]] = []

    for sw in inv.switches:
        real = locks.switches.get(sw.name) or sw.guid
        if real:
            switches[sw.name] = int(real, 16)
        else:
            todo_sw.append(sw.name)
    for node, ca, ports in cas:
        key = (node, ca)
        guid = lock_ca.get(key) or declared_ca.get(key)
        if guid is not None:
            ca_nodes[key] = guid
        else:
            todo_ca.append(key)
        for p in ports:
            pkey = (node, ca, p)
            found = lock_port.get(pkey) or declared_port.get(pkey)
            if found is not None:
                ca_ports[pkey] = found
            else:
                todo_port.append(pkey)
    known.update(switches.values(), ca_nodes.values(), ca_ports.values())

    placeholders: set[str] = set()
    taken = _Taken(known)
    for name in todo_sw:
        switches[name] = taken.claim(partial(placeholder_switch_guid, name), block=False)
        placeholders.add(name)
    # CA placeholders reserve their whole 16-GUID block (node + ports) against collisions.
    need = set(todo_ca) | {(node, ca) for node, ca, _ in todo_port}
    base: dict[tuple[str, str], int] = {}
    for node, ca, _ports in cas:
        if (node, ca) in need:
            first = placeholder_ca_guid(node, ca)  # salt 0, as `claim` tries first
            if first >> 4 not in taken.blocks:
                taken.blocks.add(first >> 4)
                taken.claimed.add(first >> 4)
                base[(node, ca)] = first
            else:
                base[(node, ca)] = taken.claim(partial(placeholder_ca_guid, node, ca), block=True)
    for key in todo_ca:
        ca_nodes[key] = base[key]
        placeholders.add(f"{key[0]}/{key[1]}")
    for node, ca, p in todo_port:
        ca_ports[(node, ca, p)] = base[(node, ca)] + p
        placeholders.add(f"{node}/{ca}/{p}")
    return GuidBook(switches, ca_nodes, ca_ports, frozenset(placeholders))


class _Taken:
    """GUIDs already in use, and the aligned 16-GUID blocks (GUID >> 4) that hold any of them.

    CA placeholders are aligned (low 4 bits 0), so a whole block is free when its number is
    not taken: one set lookup instead of sixteen."""

    def __init__(self, known: set[int]) -> None:
        self.guids = set(known)
        self.blocks = {g >> 4 for g in known}
        self.claimed: set[int] = set()  # blocks a CA placeholder took whole

    def claim(self, make: Callable[[int], int], block: bool) -> int:
        """The first placeholder (salt 0, 1, ...) that collides with nothing taken: the GUID
        itself, or with `block` its whole aligned 16-GUID block (a CA node GUID + its ports)."""
        salt = 0
        while True:
            guid = make(salt)
            if block:
                if guid >> 4 not in self.blocks:
                    self.blocks.add(guid >> 4)
                    self.claimed.add(guid >> 4)
                    return guid
            elif guid not in self.guids and guid >> 4 not in self.claimed:
                self.guids.add(guid)
                self.blocks.add(guid >> 4)
                return guid
            salt += 1
