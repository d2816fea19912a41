"""Bill of materials of a fabric (generated or declared), priced from a PriceTable.

Counted: switches by model; the HCAs (and GPUs) of the nodes the fabric reaches; per
link, by medium: copper or active optical cables by rate and length; for fiber, a
transceiver at each end plus the fiber (direct) or two jumpers to the patch panels (on a
trunk); MPO trunks by fiber and length; patch panels. Item keys (`switch/QM9700`,
`cable/AOC/HDR`, `transceiver/NDR/MMF`, `jumper/OM4`, `trunk/OM4`, `patch_panel/mpo24`)
are the price table's keys. Price of an item of length L: `<key>/<L>m` if listed, else
`<key>` + `<key>/per_m` x L; an item with neither is listed as unpriced.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..model.index import Index
from ..model.inventory import PriceTable
from .geometry import Geometry


@dataclass(frozen=True, slots=True)
class BomLine:
    category: str
    item: str
    length_m: float | None
    quantity: int
    unit_price: float | None

    @property
    def total(self) -> float | None:
        return None if self.unit_price is None else self.unit_price * self.quantity


@dataclass(frozen=True)
class Bom:
    lines: tuple[BomLine, ...]
    currency: str
    example_prices: bool

    @property
    def total(self) -> float:
        return sum(line.total or 0.0 for line in self.lines)

    @property
    def unpriced(self) -> list[str]:
        return sorted({line.item for line in self.lines if line.unit_price is None})

    def by_category(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for line in self.lines:
            out[line.category] = out.get(line.category, 0.0) + (line.total or 0.0)
        return out


def price(table: PriceTable, item: str, length: float | None) -> float | None:
    items = table.items
    if length is not None:
        exact = items.get(f"{item}/{length:g}m")
        if exact is not None:
            return exact
    base, per_m = items.get(item), items.get(f"{item}/per_m")
    if base is None and per_m is None:
        return None
    return (base or 0.0) + (per_m or 0.0) * (length or 0.0)


def bill_of_materials(index: Index, prices: PriceTable) -> Bom:
    inv, cat = index.inv, index.cat
    count: Counter[tuple[str, str, float | None]] = Counter()
    for sw in inv.switches:
        count[("switch", f"switch/{sw.model}", None)] += 1
    panels = {p.name: p for p in inv.patch_panels}
    trunks = index.trunks
    geo = Geometry(inv.site, {r.name: r.index for r in inv.site.rows})
    racks = index.racks
    where = index.places
    hcas: set[tuple[str, str]] = set()
    jumper: dict[tuple[str, int, str, str], float] = {}  # (rack, U, trunk panels) -> orderable jumper
    copper: Counter[tuple[str, str, float]] = Counter()  # (media, rate, length): named after the loop
    optics: Counter[tuple[str, str]] = Counter()  # (rate, fiber kind): two transceivers a link
    for c, declared in zip(inv.cables, index.cable_rates, strict=True):
        a, b = c.a, c.b
        if a.hca is not None:
            hcas.add((a.device, a.hca))
        if b.hca is not None:
            hcas.add((b.device, b.hca))
        rate = declared or "HDR"
        if c.media != "fiber":
            copper[(c.media, rate, c.length_m)] += 1
            continue
        trunk = trunks.get(c.trunk) if c.trunk else None
        kind = c.fiber_type or (trunk.fiber_type if trunk else "OM4")
        optics[(rate, kind)] += 1
        if trunk is None:
            count[("fiber", f"fiber/{kind}", c.length_m)] += 1
            continue
        for ref in (a, b):
            rack, u = where.get(ref.device, ("", 0))
            key = (rack, u, trunk.a_panel, trunk.b_panel)
            if key not in jumper:
                panel = next((panels[p] for p in (trunk.a_panel, trunk.b_panel) if p in panels
                              and panels[p].rack == rack), None)
                run = geo.length(racks[rack], u, racks[rack], panel.u) if panel and rack in racks else 3.0
                jumper[key] = cat.orderable_length("fiber", run) or run
            count[("jumper", f"jumper/{kind}", jumper[key])] += 1
    for (media, rate, length), n in copper.items():
        count[("cable", f"cable/{media}/{rate}", length)] += n
    for (rate, fiber), n in optics.items():
        count[("transceiver", f"transceiver/{rate}/{'SMF' if fiber == 'OS2' else 'MMF'}", None)] += 2 * n
    for node, hca in sorted(hcas):
        h = index.hca(node, hca)
        if h is not None:
            count[("hca", f"hca/{h.model}", None)] += 1
    for node in sorted({n for n, _ in hcas}):
        gpus = index.hardware[node].gpus if node in index.hardware else None
        if gpus is not None and gpus.count:
            count[("gpu", f"gpu/{gpus.model}", None)] += gpus.count
    for t in inv.trunks:
        count[("trunk", f"trunk/{t.fiber_type}", t.length_m)] += 1
    for p in inv.patch_panels:
        count[("patch_panel", f"patch_panel/mpo{p.mpo_ports}", None)] += 1
    order = ("switch", "hca", "gpu", "transceiver", "cable", "fiber", "jumper", "trunk", "patch_panel")
    lines = [BomLine(cat_, item, length, qty, price(prices, item, length))
             for (cat_, item, length), qty in sorted(count.items(), key=lambda kv: (
                 order.index(kv[0][0]), kv[0][1], kv[0][2] or 0.0))]
    return Bom(tuple(lines), prices.currency, prices.example)
