"""``ibv_devinfo`` (rdma-core): one block per RDMA device (``hca_id:``) with its ports.

Accepts the upstream layout (``port:`` blocks right after ``phys_port_cnt``) and the older
one with a ``Device ports:`` line, tab- or space-indented; ``-v`` adds fields that are kept
as text in ``extra``. ``No IB devices found`` is a typed empty result. A device block
must carry its identity fields, and as many ``port:`` blocks as ``phys_port_cnt`` says
(a cut output is a :class:`ParseError`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from clusterforge.parse._common import UINT_RE, empty_error, fail, first_nonblank, shorten, split_lines
from clusterforge.util.guid import pad_guid

TOOL = "ibv-devinfo"

__all__ = ["IbvDevice", "IbvPort", "parse", "to_json"]


@dataclass(frozen=True, slots=True)
class IbvPort:
    port: int
    state: str
    """``PORT_ACTIVE``, ``PORT_DOWN``, ``PORT_INIT``, ``PORT_ARMED``."""
    state_code: int
    max_mtu: int
    active_mtu: int
    sm_lid: int
    port_lid: int
    port_lmc: int
    link_layer: str | None
    """``InfiniBand`` or ``Ethernet``; None when not printed (old rdma-core)."""
    extra: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class IbvDevice:
    hca_id: str
    transport: str
    """As printed, e.g. ``InfiniBand (0)``."""
    fw_ver: str | None
    """None when printed empty (some non-Mellanox devices)."""
    node_guid: str
    """``0x`` + 16 hex digits (printed as ``9c63:c003:00d4:20f0``)."""
    sys_image_guid: str
    vendor_id: int
    vendor_part_id: int
    """The PCI device id in decimal: 4129 = ConnectX-7 (MT4129)."""
    hw_ver: str
    board_id: str | None
    phys_port_cnt: int
    ports: tuple[IbvPort, ...]
    extra: Mapping[str, str] = field(default_factory=dict)


_FIELD_RE = re.compile(r"\s+([^:\s][^:]*?):\s*(.*?)\s*")
_HCA_RE = re.compile(r"hca_id:\s*(\S+)\s*")
_CODED_RE = re.compile(r"([A-Z_]+|\d+) \((\d+)\)")
_GUID_RE = re.compile(r"([0-9a-fA-F]{4}):([0-9a-fA-F]{4}):([0-9a-fA-F]{4}):([0-9a-fA-F]{4})")
_HEX_RE = re.compile(r"0x[0-9a-fA-F]+")
_DEVICE_REQUIRED = ("transport", "node_guid", "sys_image_guid", "vendor_id", "vendor_part_id", "hw_ver",
                    "phys_port_cnt")
_PORT_REQUIRED = ("state", "max_mtu", "active_mtu", "sm_lid", "port_lid", "port_lmc")
_NO_DEVICES = "No IB devices found"

Ctx = tuple[int, str]
Fields = dict[str, tuple[str, int, str]]  # key -> (value, line number, line)


def _value(fields: Fields, key: str) -> tuple[str, Ctx]:
    value, ln, raw = fields[key]
    return value, (ln, raw)


def _int(fields: Fields, key: str) -> int:
    value, (ln, raw) = _value(fields, key)
    if UINT_RE.fullmatch(value):
        return int(value)
    if _HEX_RE.fullmatch(value):
        return int(value, 16)
    raise fail(TOOL, ln, raw, f"{key}: expected a number, got {value!r}")


def _coded(fields: Fields, key: str) -> tuple[str, int]:
    """``PORT_ACTIVE (4)`` -> ("PORT_ACTIVE", 4); ``4096 (5)`` -> ("4096", 5)."""
    value, (ln, raw) = _value(fields, key)
    m = _CODED_RE.fullmatch(value)
    if m is None:
        raise fail(TOOL, ln, raw, f"{key}: expected 'VALUE (N)', got {value!r}")
    return m.group(1), int(m.group(2))


def _guid(fields: Fields, key: str) -> str:
    value, (ln, raw) = _value(fields, key)
    m = _GUID_RE.fullmatch(value)
    if m is None:
        raise fail(TOOL, ln, raw, f"{key}: expected a GUID like 9c63:c003:00d4:20f0, got {value!r}")
    return pad_guid("".join(m.groups()))


def _missing(fields: Fields, required: tuple[str, ...], what: str, ctx: Ctx) -> None:
    missing = [k for k in required if k not in fields]
    if missing:
        raise fail(TOOL, ctx[0], ctx[1], f"{what} is missing {', '.join(missing)} (truncated output?)")


def _port(number: int, fields: Fields, ctx: Ctx) -> IbvPort:
    _missing(fields, _PORT_REQUIRED, f"port {number}", ctx)
    state, code = _coded(fields, "state")
    mtu_max, mtu_active = _coded(fields, "max_mtu")[0], _coded(fields, "active_mtu")[0]
    for key, mtu in (("max_mtu", mtu_max), ("active_mtu", mtu_active)):
        if not mtu.isdigit():
            value, (ln, raw) = _value(fields, key)
            raise fail(TOOL, ln, raw, f"{key}: expected 'BYTES (N)', got {value!r}")
    link = fields.get("link_layer")
    known = {*_PORT_REQUIRED, "link_layer"}
    return IbvPort(
        port=number, state=state, state_code=code, max_mtu=int(mtu_max), active_mtu=int(mtu_active),
        sm_lid=_int(fields, "sm_lid"), port_lid=_int(fields, "port_lid"), port_lmc=_int(fields, "port_lmc"),
        link_layer=link[0] if link else None,
        extra={k: v[0] for k, v in fields.items() if k not in known},
    )


def _device(hca: str, fields: Fields, ports: list[IbvPort], ctx: Ctx, end: Ctx) -> IbvDevice:
    _missing(fields, _DEVICE_REQUIRED, f"device {hca}", ctx)
    count = _int(fields, "phys_port_cnt")
    if len(ports) != count:
        raise fail(TOOL, end[0], end[1],
                   f"device {hca}: phys_port_cnt is {count} but {len(ports)} port block(s) follow (truncated?)")
    board = fields.get("board_id")
    fw = fields.get("fw_ver")
    known = {*_DEVICE_REQUIRED, "fw_ver", "board_id"}
    return IbvDevice(
        hca_id=hca, transport=fields["transport"][0], fw_ver=fw[0] or None if fw else None,
        node_guid=_guid(fields, "node_guid"), sys_image_guid=_guid(fields, "sys_image_guid"),
        vendor_id=_int(fields, "vendor_id"), vendor_part_id=_int(fields, "vendor_part_id"),
        hw_ver=fields["hw_ver"][0], board_id=board[0] or None if board else None, phys_port_cnt=count,
        ports=tuple(ports), extra={k: v[0] for k, v in fields.items() if k not in known},
    )


def parse(text: str) -> tuple[IbvDevice, ...]:
    lines = split_lines(text)
    start = first_nonblank(lines)
    if start < 0:
        raise empty_error(TOOL)
    if lines[start].strip() == _NO_DEVICES:
        for j in range(start + 1, len(lines)):
            if lines[j].strip():
                raise fail(TOOL, j + 1, lines[j], f"unexpected line after {_NO_DEVICES!r}")
        return ()
    devices: list[IbvDevice] = []
    hca: str | None = None
    hca_ctx: Ctx = (0, "")
    dev_fields: Fields = {}
    ports: list[IbvPort] = []
    port_no: int | None = None
    port_ctx: Ctx = (0, "")
    port_fields: Fields = {}
    last: Ctx = (1, "")
    last_key = ""

    def close_port() -> None:
        nonlocal port_no, port_fields
        if port_no is not None:
            ports.append(_port(port_no, port_fields, port_ctx))
        port_no, port_fields = None, {}

    def close_device(end: Ctx) -> None:
        nonlocal hca, dev_fields, ports
        close_port()
        if hca is not None:
            devices.append(_device(hca, dev_fields, ports, hca_ctx, end))
        hca, dev_fields, ports = None, {}, []

    for i in range(start, len(lines)):
        raw = lines[i]
        ctx = (i + 1, raw)
        if not raw.strip():
            continue
        last = ctx
        m = _HCA_RE.fullmatch(raw)
        if m is not None:
            close_device(ctx)
            if any(d.hca_id == m.group(1) for d in devices):
                raise fail(TOOL, *ctx, f"device {m.group(1)!r} printed twice")
            hca, hca_ctx = m.group(1), ctx
            continue
        if hca is None:
            raise fail(TOOL, *ctx, f"expected 'hca_id: DEVICE', got {shorten(raw)}")
        if raw.strip() == "Device ports:":
            continue
        f = _FIELD_RE.fullmatch(raw)
        target = port_fields if port_no is not None else dev_fields
        if f is None:
            if raw[:1].isspace() and last_key in target:  # -v: a flag list continues the field above
                value, ln, first = target[last_key]
                target[last_key] = (f"{value} {raw.strip()}".strip(), ln, first)
                continue
            raise fail(TOOL, *ctx, f"expected 'name: value', got {shorten(raw)}")
        key, value = f.group(1), f.group(2)
        last_key = key
        if key == "port":
            if UINT_RE.fullmatch(value) is None:
                raise fail(TOOL, *ctx, f"bad port number {value!r}")
            close_port()
            port_no, port_ctx = int(value), ctx
            if any(p.port == port_no for p in ports):
                raise fail(TOOL, *ctx, f"port {port_no} printed twice")
            continue
        target.setdefault(key, (value, ctx[0], raw))
    close_device(last)
    return tuple(devices)


def to_json(records: tuple[IbvDevice, ...]) -> list[dict[str, Any]]:
    return [
        {
            "hca_id": d.hca_id, "transport": d.transport, "fw_ver": d.fw_ver, "node_guid": d.node_guid,
            "sys_image_guid": d.sys_image_guid, "vendor_id": d.vendor_id, "vendor_part_id": d.vendor_part_id,
            "hw_ver": d.hw_ver, "board_id": d.board_id, "phys_port_cnt": d.phys_port_cnt,
            "ports": [
                {"port": p.port, "state": p.state, "state_code": p.state_code, "max_mtu": p.max_mtu,
                 "active_mtu": p.active_mtu, "sm_lid": p.sm_lid, "port_lid": p.port_lid,
                 "port_lmc": p.port_lmc, "link_layer": p.link_layer, "extra": dict(p.extra)}
                for p in d.ports
            ],
            "extra": dict(d.extra),
        }
        for d in records
    ]
