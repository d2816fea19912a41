"""``lctl list_nids``: one LNet NID per line (``10.0.0.1@o2ib``, ``0@lo``, ``10.0.0.2@tcp1``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from clusterforge.parse._common import empty_error, fail, numbered, shorten, split_lines

TOOL = "lctl-list-nids"

__all__ = ["LnetNid", "parse", "parse_nid", "to_json"]


@dataclass(frozen=True, slots=True)
class LnetNid:
    nid: str
    """As printed."""
    address: str
    net: str
    """Network as printed (``o2ib``, ``o2ib1``, ``tcp``)."""
    lnd: str
    """Network type without number (``o2ib``)."""
    net_num: int
    """Network number; ``o2ib`` == ``o2ib0`` -> 0."""


_NID_RE = re.compile(r"([^\s@]+)@([a-z][a-z0-9]*?)(\d*)")


def parse_nid(raw: str) -> LnetNid | None:
    """Parse one NID string, or None if it is not one."""
    m = _NID_RE.fullmatch(raw.strip())
    if m is None:
        return None
    addr, lnd, num = m.groups()
    return LnetNid(nid=raw.strip(), address=addr, net=lnd + num, lnd=lnd,
                   net_num=int(num) if num else 0)


def parse(text: str) -> tuple[LnetNid, ...]:
    out: list[LnetNid] = []
    for idx, raw, _ in numbered(split_lines(text)):
        nid = parse_nid(raw)
        if nid is None:
            raise fail(TOOL, idx, raw,
                       f"expected an LNet NID like 10.0.0.1@o2ib, got {shorten(raw)}")
        out.append(nid)
    if not out:
        raise empty_error(TOOL)
    return tuple(out)


def to_json(records: tuple[LnetNid, ...]) -> list[dict[str, Any]]:
    return [
        {"nid": n.nid, "address": n.address, "net": n.net, "lnd": n.lnd, "net_num": n.net_num}
        for n in records
    ]
