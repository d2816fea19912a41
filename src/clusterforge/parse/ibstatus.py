"""``ibstatus`` (the infiniband-diags shell script): one block per port."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from clusterforge.parse._common import empty_error, fail, numbered, shorten, split_lines

TOOL = "ibstatus"

__all__ = ["IbstatusPort", "parse", "to_json"]


@dataclass(frozen=True, slots=True)
class IbstatusPort:
    device: str
    port: int
    default_gid: str | None
    """None when ibstatus prints ``unknown``."""
    base_lid: int
    """ibstatus prints LIDs in hex (``0x30``); converted to int (48)."""
    sm_lid: int
    state: str
    """``ACTIVE``, ``DOWN``, ``INIT``, ``ARMED`` (the text after ``N:``)."""
    state_code: int
    physical_state: str
    physical_state_code: int
    rate_gbps: float
    rate: str
    """The full rate text, e.g. ``200 Gb/sec (4X HDR)``."""
    width: str | None
    """``4X`` etc. from the rate text, None if absent."""
    speed: str | None
    """``HDR`` etc. from the rate text, None if absent."""
    link_layer: str | None


_HEADER_RE = re.compile(r"Infiniband device '([^']+)' port (\d+) status:")
_FIELD_RE = re.compile(r"([a-z_ ]+?):\s*(.*)")
_CODE_RE = re.compile(r"(\d+): (\S.*)")
_RATE_RE = re.compile(r"(\d+(?:\.\d+)?) Gb/sec(?: \((\d+X) ?([A-Za-z0-9?]*)\))?")
_HEXLID_RE = re.compile(r"0x[0-9a-fA-F]+|\d+")
_KEYS = {
    "default gid": "gid",
    "base lid": "base_lid",
    "sm lid": "sm_lid",
    "state": "state",
    "phys state": "phys",
    "rate": "rate",
    "link_layer": "link_layer",
}
_REQUIRED = ("gid", "base_lid", "sm_lid", "state", "phys", "rate")


def _lid(raw: str, tool_ctx: tuple[int, str]) -> int:
    if _HEXLID_RE.fullmatch(raw) is None:
        raise fail(TOOL, tool_ctx[0], tool_ctx[1], f"bad LID {raw!r}")
    return int(raw, 16) if raw.startswith("0x") else int(raw)


def _finish(dev: str, port: int, vals: dict[str, tuple[str, int, str]], ctx: tuple[int, str],
            ) -> IbstatusPort:
    missing = [k for k in _REQUIRED if k not in vals]
    if missing:
        raise fail(TOOL, ctx[0], ctx[1], f"port block is missing fields {missing}")
    codes: dict[str, tuple[int, str]] = {}
    for key in ("state", "phys"):
        value, ln, raw = vals[key]
        m = _CODE_RE.fullmatch(value)
        if m is None:
            raise fail(TOOL, ln, raw, f"expected 'N: NAME', got {value!r}")
        codes[key] = (int(m.group(1)), m.group(2))
    rate_txt, ln, raw = vals["rate"]
    rm = _RATE_RE.fullmatch(rate_txt)
    if rm is None:
        raise fail(TOOL, ln, raw, f"bad rate {rate_txt!r}")
    gid = vals["gid"][0]
    return IbstatusPort(
        device=dev,
        port=port,
        default_gid=None if gid == "unknown" else gid,
        base_lid=_lid(vals["base_lid"][0], vals["base_lid"][1:]),
        sm_lid=_lid(vals["sm_lid"][0], vals["sm_lid"][1:]),
        state=codes["state"][1],
        state_code=codes["state"][0],
        physical_state=codes["phys"][1],
        physical_state_code=codes["phys"][0],
        rate_gbps=float(rm.group(1)),
        rate=rate_txt,
        width=rm.group(2),
        speed=rm.group(3) or None,
        link_layer=vals["link_layer"][0] if "link_layer" in vals else None,
    )


def parse(text: str) -> tuple[IbstatusPort, ...]:
    lines = split_lines(text)
    ports: list[IbstatusPort] = []
    cur: tuple[str, int] | None = None
    ctx = (1, "")
    vals: dict[str, tuple[str, int, str]] = {}
    for idx, raw, s in numbered(lines):
        hm = _HEADER_RE.fullmatch(s)
        if hm is not None:
            if cur is not None:
                ports.append(_finish(cur[0], cur[1], vals, ctx))
            cur, ctx, vals = (hm.group(1), int(hm.group(2))), (idx, raw), {}
            continue
        if cur is None:
            raise fail(TOOL, idx, raw,
                       f"expected \"Infiniband device '<ca>' port N status:\", got {shorten(raw)}")
        fm = _FIELD_RE.fullmatch(s)
        if fm is None or fm.group(1) not in _KEYS:
            raise fail(TOOL, idx, raw, f"unknown ibstatus field line {shorten(raw)}")
        key = _KEYS[fm.group(1)]
        if key in vals:
            raise fail(TOOL, idx, raw, f"duplicate field {fm.group(1)!r}")
        vals[key] = (fm.group(2).strip(), idx, raw)
    if cur is None:
        raise empty_error(TOOL)
    ports.append(_finish(cur[0], cur[1], vals, ctx))
    return tuple(ports)


def to_json(records: tuple[IbstatusPort, ...]) -> list[dict[str, Any]]:
    return [
        {
            "device": p.device,
            "port": p.port,
            "default_gid": p.default_gid,
            "base_lid": p.base_lid,
            "sm_lid": p.sm_lid,
            "state": p.state,
            "state_code": p.state_code,
            "physical_state": p.physical_state,
            "physical_state_code": p.physical_state_code,
            "rate_gbps": p.rate_gbps,
            "rate": p.rate,
            "width": p.width,
            "speed": p.speed,
            "link_layer": p.link_layer,
        }
        for p in records
    ]
