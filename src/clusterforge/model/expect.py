"""The expected fabric, derived from the inventory: which port should meet which (the words that name its
ports, places and cables are model/place_text.py's)."""

from __future__ import annotations

from dataclasses import dataclass

from .cabling import Cable
from .index import Index, PortKey


@dataclass(frozen=True, slots=True)
class ExpectedLink:
    cable: Cable
    index: int  # position in inventory.cables: the model path ("cables", index) of its declaration
    a: PortKey
    b: PortKey
    width: str  # "4x"
    speed: str  # "HDR"
    rate: str  # declared rate of the slower end, e.g. "HDR100"


def speed_name(rate: str) -> str:
    """HDR100 -> HDR, NDR200 -> NDR: the per-lane speed that ibnetdiscover prints."""
    return rate.rstrip("0123456789")


def expected_links(index: Index) -> dict[frozenset[PortKey], ExpectedLink]:
    out: dict[frozenset[PortKey], ExpectedLink] = {}
    for i, (cable, declared) in enumerate(zip(index.inv.cables, index.cable_rates, strict=True)):
        a, b = cable.a.key, cable.b.key
        rate = declared or "HDR"
        info = index.cat.rates[rate]
        out[frozenset((a, b))] = ExpectedLink(cable, i, a, b, info.width, speed_name(rate), rate)
    return out
