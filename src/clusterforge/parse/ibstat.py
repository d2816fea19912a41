"""``ibstat`` (infiniband-diags): all CAs and their ports.

Handles tab or space indentation, the flat ``ibstat <ca> <port>`` layout
(``CA: 'mlx4_0'`` header, unindented ``Port N:`` and port fields), ``ibstat -s``
(CA fields only, no ports), empty ``CA type:`` / ``Firmware version:`` values,
a missing ``CA type:`` line, Ethernet link layer and ``Rate: 56 (FDR10)`` /
``Rate: 2.5``.  Indentation is not significant: CA and port field names are
disjoint, so the structure is recovered from the field names.

An ``ibpanic:``/``ibwarn:`` line (ibstat died part-way, e.g. ``stat of IB device
'mlx5_8' failed``) is a :class:`ParseError`: the listing is incomplete.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from clusterforge.parse._common import empty_error, fail, norm_guid, numbered, shorten, split_lines
from clusterforge.parse._common import to_int as _int

TOOL = "ibstat"

__all__ = ["IbstatCa", "IbstatPort", "parse", "to_json"]


@dataclass(frozen=True, slots=True)
class IbstatPort:
    port: int
    state: str
    physical_state: str
    rate: int | float
    """Gb/s as printed (``Rate: 2.5`` -> 2.5, ``Rate: 56 (FDR10)`` -> 56)."""
    fdr10: bool
    base_lid: int
    lmc: int
    sm_lid: int
    capability_mask: str
    port_guid: str
    link_layer: str
    """``InfiniBand`` or ``Ethernet``.  Required: it is the last port line, so a
    missing one means the output was cut."""


@dataclass(frozen=True, slots=True)
class IbstatCa:
    ca: str
    """Device name, e.g. ``mlx5_0``, ``mlx5_bond_0``, ``hfi1_0``."""
    node_type: str
    """``CA`` (or ``Switch``/``Router`` for a switch's management port)."""
    ca_type: str | None
    """``MT4123`` etc.; None when the line is absent or empty."""
    num_ports: int | None
    firmware: str | None
    hardware_version: str | None
    node_guid: str | None
    system_image_guid: str | None
    ports: tuple[IbstatPort, ...]


_HEADER_RE = re.compile(r"(CA|Switch|Router|iWARP RNIC|\?\?\?)(:?) '([^']+)'")
_PORT_RE = re.compile(r"Port (\d+):")
_FIELD_RE = re.compile(r"([A-Za-z][A-Za-z ]*?):(?: (.*))?")
_RATE_RE = re.compile(r"(\d+(?:\.\d+)?)( \(FDR10\))?")
_HEX32_RE = re.compile(r"0x[0-9a-fA-F]{1,8}")
# what the kernel's link_layer sysfs attribute can say
_LINK_LAYERS = frozenset({"InfiniBand", "Ethernet", "Unknown"})
# umad2sim (ibsim's client library) fakes sysfs with "IB": the same thing, spelled short
_LINK_LAYER_ALIASES = {"IB": "InfiniBand"}

_CA_FIELDS = {
    "type": "ca_type",
    "Number of ports": "num_ports",
    "Firmware version": "firmware",
    "Hardware version": "hardware_version",
    "Node GUID": "node_guid",
    "System image GUID": "system_image_guid",
}
_PORT_FIELDS = {
    "State": "state",
    "Physical state": "physical_state",
    "Rate": "rate",
    "Base lid": "base_lid",
    "LMC": "lmc",
    "SM lid": "sm_lid",
    "Capability mask": "capability_mask",
    "Port GUID": "port_guid",
    "Link layer": "link_layer",
}
_REQUIRED_PORT = list(_PORT_FIELDS.values())


class _Builder:
    """Accumulates one CA (or one port) while scanning lines."""

    def __init__(self, line_no: int, line: str) -> None:
        self.line_no = line_no
        self.line = line
        self.values: dict[str, str] = {}
        self.children: list[IbstatPort] = []


def _finish_port(b: _Builder, port_no: int) -> IbstatPort:
    missing = [k for k in _REQUIRED_PORT if k not in b.values]
    if missing:
        raise fail(TOOL, b.line_no, b.line, f"port {port_no} is missing fields: {missing}")
    v = b.values
    rate_m = _RATE_RE.fullmatch(v["rate"])
    if rate_m is None:
        raise fail(TOOL, b.line_no, b.line, f"bad Rate value {v['rate']!r}")
    rate_txt = rate_m.group(1)
    rate: int | float = float(rate_txt) if "." in rate_txt else int(rate_txt)
    ints = {k: _int(v[k]) for k in ("base_lid", "lmc", "sm_lid")}
    for key, val in ints.items():
        if val is None:
            raise fail(TOOL, b.line_no, b.line, f"port {port_no}: {key} is not an integer")
    guid = norm_guid(v["port_guid"])
    if guid is None or not v["port_guid"].startswith("0x"):
        raise fail(TOOL, b.line_no, b.line, f"port {port_no}: bad Port GUID {v['port_guid']!r}")
    v["link_layer"] = _LINK_LAYER_ALIASES.get(v["link_layer"], v["link_layer"])
    if v["link_layer"] not in _LINK_LAYERS:
        raise fail(TOOL, b.line_no, b.line,
                   f"port {port_no}: unknown Link layer {v['link_layer']!r}")
    if _HEX32_RE.fullmatch(v["capability_mask"]) is None:
        raise fail(TOOL, b.line_no, b.line, f"port {port_no}: bad Capability mask")
    return IbstatPort(
        port=port_no,
        state=v["state"],
        physical_state=v["physical_state"],
        rate=rate,
        fdr10=rate_m.group(2) is not None,
        base_lid=ints["base_lid"] or 0,
        lmc=ints["lmc"] or 0,
        sm_lid=ints["sm_lid"] or 0,
        capability_mask=v["capability_mask"].lower(),
        port_guid=guid,
        link_layer=v["link_layer"],
    )


def _finish_ca(b: _Builder, name: str, node_type: str, flat: bool) -> IbstatCa:
    v = b.values
    num_ports: int | None = None
    if not flat:
        for key in ("num_ports", "hardware_version", "node_guid", "system_image_guid"):
            if key not in v:
                raise fail(TOOL, b.line_no, b.line, f"CA {name!r} is missing field {key}")
        num_ports = _int(v["num_ports"])
        if num_ports is None or num_ports < 0:
            raise fail(TOOL, b.line_no, b.line, f"CA {name!r}: bad 'Number of ports'")
        # a switch's port 0 is listed too
        allowed = (num_ports,) if node_type == "CA" else (num_ports, num_ports + 1)
        if b.children and len(b.children) not in allowed:
            raise fail(
                TOOL, b.line_no, b.line,
                f"CA {name!r} reports {num_ports} ports but {len(b.children)} are listed"
                " (truncated output?)",
            )
    guids: dict[str, str | None] = {}
    for key in ("node_guid", "system_image_guid"):
        if key in v:
            guids[key] = norm_guid(v[key])
            if guids[key] is None:
                raise fail(TOOL, b.line_no, b.line, f"CA {name!r}: bad {key} {v[key]!r}")
        else:
            guids[key] = None
    return IbstatCa(
        ca=name,
        node_type=node_type,
        ca_type=v.get("ca_type") or None,
        num_ports=num_ports,
        firmware=v.get("firmware") or None,
        hardware_version=v.get("hardware_version") or None,
        node_guid=guids["node_guid"],
        system_image_guid=guids["system_image_guid"],
        ports=tuple(b.children),
    )


def parse(text: str) -> tuple[IbstatCa, ...]:
    """Parse ``ibstat`` / ``ibstat -s`` / ``ibstat <ca> [port]`` output."""
    lines = split_lines(text)
    if not any(ln.strip() for ln in lines):
        raise empty_error(TOOL)
    cas: list[IbstatCa] = []
    ca: _Builder | None = None
    ca_name = node_type = ""
    flat = False
    port: _Builder | None = None
    port_no = 0

    def close_port() -> None:
        nonlocal port
        if port is not None and ca is not None:
            ca.children.append(_finish_port(port, port_no))
        port = None

    def close_ca() -> None:
        nonlocal ca
        close_port()
        if ca is not None:
            cas.append(_finish_ca(ca, ca_name, node_type, flat))
        ca = None

    for idx, raw, s in numbered(lines):
        hm = _HEADER_RE.fullmatch(s)
        if hm is not None:
            close_ca()
            ca = _Builder(idx, raw)
            node_type, flat, ca_name = hm.group(1), hm.group(2) == ":", hm.group(3)
            continue
        if s.startswith(("ibpanic:", "ibwarn:", "iberror:")):
            raise fail(TOOL, idx, raw, f"ibstat reported an error: {s}")
        if ca is None:
            raise fail(TOOL, idx, raw, f"expected \"CA '<name>'\" header, got {shorten(raw)}")
        pm = _PORT_RE.fullmatch(s)
        if pm is not None:
            close_port()
            port_no = int(pm.group(1))
            if any(p.port == port_no for p in ca.children):
                raise fail(TOOL, idx, raw, f"duplicate port {port_no}")
            port = _Builder(idx, raw)
            continue
        fm = _FIELD_RE.fullmatch(s)
        if fm is None:
            raise fail(TOOL, idx, raw, f"expected 'Name: value' field, got {shorten(raw)}")
        key, value = fm.group(1), (fm.group(2) or "").strip()
        if key.endswith(" type") and key[: -len(" type")] == node_type:
            key = "type"
        if key in _CA_FIELDS:
            if port is not None or ca.children:
                raise fail(TOOL, idx, raw, f"CA field {key!r} after the port list")
            target, attr = ca, _CA_FIELDS[key]
        elif key in _PORT_FIELDS:
            if port is None:
                raise fail(TOOL, idx, raw, f"expected 'Port N:' header, got {shorten(raw)}")
            target, attr = port, _PORT_FIELDS[key]
        else:
            raise fail(TOOL, idx, raw, f"unknown field {key!r}")
        if attr in target.values:
            raise fail(TOOL, idx, raw, f"duplicate field {key!r}")
        target.values[attr] = value
    close_ca()
    if any(c.ports for c in cas) and not all(c.ports for c in cas):
        bare = next(c for c in cas if not c.ports)
        raise fail(TOOL, len(lines), lines[-1],
                   f"CA {bare.ca!r} has no ports while others do (truncated output?)")
    return tuple(cas)


def to_json(records: tuple[IbstatCa, ...]) -> list[dict[str, Any]]:
    return [
        {
            "ca": ca.ca,
            "node_type": ca.node_type,
            "ca_type": ca.ca_type,
            "num_ports": ca.num_ports,
            "firmware": ca.firmware,
            "hardware_version": ca.hardware_version,
            "node_guid": ca.node_guid,
            "system_image_guid": ca.system_image_guid,
            "ports": [
                {
                    "port": p.port,
                    "state": p.state,
                    "physical_state": p.physical_state,
                    "rate": p.rate,
                    "fdr10": p.fdr10,
                    "base_lid": p.base_lid,
                    "lmc": p.lmc,
                    "sm_lid": p.sm_lid,
                    "capability_mask": p.capability_mask,
                    "port_guid": p.port_guid,
                    "link_layer": p.link_layer,
                }
                for p in ca.ports
            ],
        }
        for ca in records
    ]
