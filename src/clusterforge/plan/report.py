"""The plan summary as data (for `--format json`) and as text lines. Pure."""

from __future__ import annotations

from typing import Any

from .bom import Bom
from .changes import change_lines
from .checks import PlanReport
from .design import Design
from .merge import Deviation


def design_dict(d: Design) -> dict[str, Any]:
    return {
        "kind": d.kind, "tiers": d.tiers, "rate": d.rate, "rails": d.rails, "su_size": d.su_size,
        "scalable_units": d.compute_sus, "sized_for_units": d.design_sus - d.infra_sus,
        "infra_leaves": d.infra_leaves, "oversubscription": d.oversubscription,
        "leaves_per_rail": d.leaves_per_rail, "planes": d.planes, "rails_per_plane": d.rails_per_plane or d.rails,
        "leaf": {"model": d.leaf.model, "ports": d.leaf.ports, "down": d.leaf_down, "up": d.uplinks},
        "spine": {"model": d.spine.model, "per_pod": d.spines_per_pod, "links_from_each_leaf": d.leaf_spine_links},
        "core": None if d.core is None else {"model": d.core.model, "per_plane": d.cores_per_plane,
                                             "links_from_each_spine": d.spine_core_links},
        "pods": d.pods, "units_per_pod": d.sus_per_pod,
    }


def summary_dict(report: PlanReport, design: Design | None, deviations: tuple[Deviation, ...]) -> dict[str, Any]:
    free = report.free_ports
    return {
        "design": design_dict(design) if design else None,
        "tiers": report.tiers,
        "switches": report.switches,
        "cables": report.cables,
        "media": report.media,
        "trunks": report.trunks,
        "links_on_trunks": report.links_on_trunks,
        "patch_panels": report.patch_panels,
        "oversubscription": {"asked": design.oversubscription if design else None,
                             "achieved": report.oversubscription},
        "bisection_gbps": report.bisection_gbps,
        "bisection_across_planes_gbps": report.bisection_across_planes_gbps,
        "node_gbps": report.node_gbps,
        "max_switch_hops": report.max_switch_hops,
        "free_ports": {"total": sum(free.values()), "by_switch": free},
        "findings": [{"rule": f.rule, "severity": f.severity, "subject": f.subject, "message": f.message}
                     for f in report.findings],
        "deviations": [{"kind": d.kind, "subject": d.subject, "message": d.message} for d in deviations],
        "ok": report.ok,
    }


def _n(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


def summary_lines(s: dict[str, Any]) -> list[str]:
    d = s["design"]
    out: list[str] = []
    if d:
        core = f", {d['core']['per_plane']} core(s) per plane" if d["core"] else ""
        out.append(f"design: {d['kind']}, {d['tiers']} tiers at {d['rate']}; {d['scalable_units']} scalable unit(s) "
                   f"of {d['su_size']} nodes x {d['rails']} rail(s) (sized for {d['sized_for_units']}); leaf "
                   f"{d['leaf']['model']} {d['leaf']['down']} down / {d['leaf']['up']} up"
                   + (f", {d['leaves_per_rail']} leaves per rail" if d.get("leaves_per_rail", 1) > 1 else "")
                   + (f"; {d['planes']} rail planes of {d['rails_per_plane']} rail(s), "
                      f"{d['spine']['per_pod']} {d['spine']['model']} spine(s) per plane, "
                      if d.get("planes", 1) > 1 else
                      f"; {d['spine']['per_pod']} {d['spine']['model']} spine(s) per pod, ")
                   + f"{d['spine']['links_from_each_leaf']} link(s) from each leaf{core}"
                   + (f"; {d['infra_leaves']} infrastructure leaves" if d["infra_leaves"] else ""))
    sw, cb = s["switches"], s["cables"]
    out.append(f"switches: {sw['leaf']} leaf, {sw['spine']} spine, {sw['core']} core")
    out.append(f"cables: {cb['node_leaf']} node-leaf, {cb['leaf_spine']} leaf-spine, {cb['spine_core']} spine-core; "
               "by media: " + (", ".join(f"{k} {v}" for k, v in s["media"].items()) or "none"))
    if s["trunks"]:
        out.append(f"trunks: {s['trunks']} MPO-24 trunk(s) on {s['patch_panels']} patch panel(s) carry "
                   f"{s['links_on_trunks']} cross-row links (replacing {s['links_on_trunks']} individual cables)")
    over = s["oversubscription"]
    asked = f"{over['asked']} asked, " if over["asked"] else ""
    out.append(f"oversubscription: {asked}{over['achieved']} achieved (worst leaf)")
    hops = s["max_switch_hops"]
    planes = d.get("planes", 1) if d else 1
    across = (f" within the planes, {_n(s.get('bisection_across_planes_gbps', 0.0))} across them (cross-plane "
              "traffic stays in the node: NVLink, PXN)" if planes > 1 else "")
    out.append(f"bisection: {_n(s['bisection_gbps'])} Gb/s of {_n(s['node_gbps'])} Gb/s node bandwidth{across}; "
               f"worst case {hops if hops is not None else '?'} switch hop(s)")
    by = s["free_ports"]["by_switch"]
    if by:
        out.append(f"free ports: {s['free_ports']['total']} in all, {min(by.values())}-{max(by.values())} per switch")
    for f in s["findings"]:
        out.append(f"{f['rule']}  {f['severity']}  {f['subject']}: {f['message']}")
    for dv in s["deviations"]:
        out.append(f"{dv['kind']}  {dv['subject']}: {dv['message']}")
    if s.get("changes"):
        out.extend(change_lines(s["changes"]))
    return out


def bom_rows(bom: Bom) -> list[list[str]]:
    rows = []
    for line in bom.lines:
        rows.append([line.category, line.item, "" if line.length_m is None else f"{line.length_m:g}",
                     str(line.quantity), "" if line.unit_price is None else f"{line.unit_price:,.2f}",
                     "" if line.total is None else f"{line.total:,.2f}"])
    return rows
