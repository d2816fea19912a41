"""Design alternatives side by side: switch counts, cables, bisection and cost per 100 nodes.

The design brief's three options are built in (A, B, C); others are written
`NAME:key=value,...` with keys gpu, gpus, hca, hcas, rate, switch, ratio, su, planes (see
`parse_option`); `planes=rail` (or a number of rails per plane) makes a rail-plane design, shown
beside the one-fabric (three-tier past one spine layer) option with the same nodes.
Each option is planned for `nodes` nodes on a synthetic floor by the real generator,
checked, and priced from a PriceTable (example prices unless one is given).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal, cast

from ..catalog import Catalog, catalog
from ..model.fabric import FabricSpec
from ..model.inventory import PriceTable
from .bom import Bom, bill_of_materials
from .design import RATIOS
from .errors import PlanError
from .sizing import Planned, plan_synthetic
from .synthetic import Shape

Ratio = Literal["1:1", "2:1", "3:1", "4:1"]


@dataclass(frozen=True)
class Option:
    name: str
    title: str
    gpu: str
    gpus: int
    hca: str
    hcas: int
    rate: str
    switch: str
    ratio: Ratio
    su: int | None = None  # su_size (default: the largest a leaf holds)
    planes: str | None = None  # rail planes: "rail" or rails per plane (as text); None: one fabric


OPTIONS: dict[str, Option] = {
    "A": Option("A", "maximum performance", "H100-SXM", 8, "ConnectX-7", 4, "NDR", "QM9700", "1:1"),
    "B": Option("B", "balanced", "A100-SXM", 8, "ConnectX-6", 2, "HDR", "QM8700", "2:1"),
    "C": Option("C", "density", "A30", 16, "ConnectX-5", 1, "EDR", "QM8700", "4:1"),
}

_BOUNDS = {"gpus": (0, 64), "hcas": (1, 64), "su": (1, 1_000_000)}
"""Each number a design may set, from-to: GPUs as a node model holds them, one HCA at least (the rails), a
scalable unit of at least one node (and not past what any leaf tier could ever hold)."""
_KEYS = {"gpu": str, "gpus": int, "hca": str, "hcas": int, "rate": str, "switch": str, "ratio": str, "title": str,
         "su": int, "planes": str}


def parse_option(text: str) -> Option:
    """`A` / `B` / `C`, or `NAME:key=value,...` starting from option A (or from a named base: `B2=B:...`)."""
    if text in OPTIONS:
        return OPTIONS[text]
    name, _, rest = text.partition(":")
    base_name = "A"
    if "=" in name:
        name, base_name = name.split("=", 1)
    if base_name not in OPTIONS or not name:
        raise PlanError(f"design {text!r}: write A, B, C or NAME[=BASE]:key=value,...",
                        ["X:gpu=H100-SXM,gpus=8,hca=ConnectX-7,hcas=8,rate=NDR,switch=QM9700,ratio=1:1"])
    values: dict[str, Any] = {"name": name, "title": name}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        if key not in _KEYS:
            raise PlanError(f"design {text!r}: unknown key {key!r}", [f"keys: {', '.join(_KEYS)}"])
        try:
            values[key] = _KEYS[key](value)
        except ValueError:
            raise PlanError(f"design {text!r}: {key}={value!r} is not a number") from None
    for key, (low, high) in _BOUNDS.items():
        if key in values and not low <= values[key] <= high:
            raise PlanError(f"design {text!r}: {key}={values[key]:,} is out of range ({low} to {high:,})")
    if values.get("ratio", "1:1") not in RATIOS:
        raise PlanError(f"design {text!r}: ratio must be one of {', '.join(RATIOS)}")
    planes = values.get("planes")
    if planes is not None and planes != "rail" and not (planes.isdigit() and int(planes) >= 1):
        raise PlanError(f"design {text!r}: planes must be rail or a number of rails per plane")
    return replace(OPTIONS[base_name], **values)


@dataclass(frozen=True)
class Compared:
    option: Option
    nodes: int
    planned: Planned
    bom: Bom

    def per_100(self, category: str | None = None) -> float:
        cost = self.bom.total if category is None else self.bom.by_category().get(category, 0.0)
        return cost * 100 / self.nodes

    def to_dict(self) -> dict[str, Any]:
        plan, report = self.planned.plan, self.planned.report
        by_cat = self.bom.by_category()
        fabric = sum(v for k, v in by_cat.items() if k != "gpu")
        return {
            "option": self.option.name, "title": self.option.title, "nodes": self.nodes,
            "node": f"{self.option.gpus}x {self.option.gpu} + {self.option.hcas}x {self.option.hca}",
            "rate": self.option.rate, "switch": self.option.switch, "oversubscription": self.option.ratio,
            "oversubscription_achieved": report.oversubscription, "tiers": report.tiers,
            "switches": plan.switch_counts(), "cables": plan.cable_counts(), "media": plan.media_counts(),
            "trunks": len(plan.trunks), "bisection_gbps": report.bisection_gbps,
            "planes": report.planes, "bisection_across_planes_gbps": report.bisection_across_planes_gbps,
            "optics": sum(line.quantity for line in self.bom.lines if line.category == "transceiver"),
            "bisection_gbps_per_node": report.bisection_gbps / self.nodes,
            "max_switch_hops": report.max_switch_hops,
            "currency": self.bom.currency, "example_prices": self.bom.example_prices,
            "cost_per_100_nodes": {"fabric": round(fabric * 100 / self.nodes, 2),
                                   "gpus": round(by_cat.get("gpu", 0.0) * 100 / self.nodes, 2),
                                   "total": round(self.per_100(), 2)},
            "unpriced": self.bom.unpriced,
            "notes": list(self.planned.notes),
        }


def compare(options: list[Option], prices: PriceTable, nodes: int = 100, cat: Catalog | None = None) -> list[Compared]:
    cat = cat or catalog()
    out = []
    for opt in options:
        for what, known in (("gpu", cat.gpus), ("hca", cat.hcas), ("switch", cat.switches), ("rate", cat.rates)):
            value = cast(str, getattr(opt, what))
            if value not in known:
                raise PlanError(f"design {opt.name}: unknown {what} {value!r}", [", ".join(sorted(known))])
        planes = None if opt.planes is None else "rail" if opt.planes == "rail" else int(opt.planes)
        spec = FabricSpec(rate=opt.rate, leaf_model=opt.switch, oversubscription=opt.ratio, su_size=opt.su,
                          planes=planes)
        shape = Shape(nodes=nodes, ports_per_node=opt.hcas, rate=opt.rate, hca_model=opt.hca, gpu_model=opt.gpu,
                      gpus_per_node=opt.gpus, node_u=8 if opt.gpus <= 8 else 4)
        planned = plan_synthetic(shape, spec, cat)
        out.append(Compared(opt, nodes, planned, bill_of_materials(planned.index, prices)))
    return out
