"""The expected fabric, derived from the inventory: which port should meet which."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.cabling import Cable
from ..model.index import Index, PortKey


@dataclass(frozen=True, slots=True)
class ExpectedLink:
    cable: Cable
    index: int  # position in inventory.cables
    a: PortKey
    b: PortKey
    width: str  # "4x"
    speed: str  # "HDR"
    rate: str  # declared rate of the slower end, e.g. "HDR100"


def port_text(key: PortKey) -> str:
    device, hca, port = key
    return f"{device} {hca}/{port}" if hca else f"{device}/{port}"


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


def device_floor(index: Index, device: str) -> str:
    """Rack and unit of a node or switch, for the technician."""
    place = index.places.get(device)
    return f"rack {place[0]} U{place[1]}" if place is not None else "not in the inventory"


def floor_of(index: Index, key: PortKey) -> str:
    """Rack and unit of the device that owns a port."""
    return device_floor(index, key[0])


def cable_text(index: Index, cable: Cable) -> str:
    label = f" (label {cable.label})" if cable.label else ""
    text = f"cable {cable.id}{label}, {cable.media} {cable.length_m:g} m"
    if cable.trunk:
        trunk = index.trunks.get(cable.trunk)
        if trunk is not None:
            text += (
                f", on MPO trunk {trunk.id} lane group {cable.lane_group} between patch panels "
                f"{trunk.a_panel} and {trunk.b_panel}"
            )
    return text
