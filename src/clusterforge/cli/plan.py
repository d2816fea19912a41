"""`clusterforge plan`: plan an environment's fabric, size one without an inventory, compare designs.

    clusterforge plan ENV [--format json] [--write [--renumber]] [--export DIR]
    clusterforge plan size --nodes N --ports-per-node P --radix K [...]
    clusterforge plan compare [--nodes 100] [--design A --design B ...]
    clusterforge plan bom ENV [--prices FILE] [--format text|json|csv]
    clusterforge plan storage ENV [--prices FILE] [--format text|json]
"""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
import yaml
from pydantic import ValidationError
from rich.table import Table
from typer.core import TyperGroup

from ..check import run_checks
from ..inventory import addresses_file
from ..inventory.load import Source
from ..model.addresses import allocate, moves
from ..model.index import Index
from ..model.inventory import Inventory, PriceTable
from ..plan import (
    EXAMPLE_PRICES,
    GENERATED_FILE,
    PlanError,
    SizeRequest,
    bill_of_materials,
    check_plan,
    compare,
    generated_yaml,
    merge_plan,
    parse_option,
    plan_fabric,
    size,
    size_dict,
)
from ..plan.changes import changes
from ..plan.checks import PlanReport
from ..plan.frozen import Frozen
from ..plan.merge import Merged
from ..plan.report import bom_rows, summary_dict, summary_lines
from ..util.csvtext import csv_text
from ..util.echo import echo
from ..util.errors import ExitCode, InventoryInvalid, InventoryIssue
from ..util.fsutil import write_atomic
from ..util.gcpause import gc_paused
from .console import Format, err, out, print_json
from .loading import check_output_path, fail_inventory, load_inventory_or_fail
from .locking import locked
from .progress import no_progress, progress

if TYPE_CHECKING:
    from ..plan.storage import FsStorage

_LISTS = ("switches", "cables", "patch_panels", "trunks")


class _DefaultShow(TyperGroup):
    """`plan ENV ...` means `plan show ENV ...`."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["show", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(cls=_DefaultShow, no_args_is_help=True, help="Plan the fabric: generate, size, compare, BOM.")


def _fail_plan(exc: PlanError) -> NoReturn:
    err.print(f"plan error: {exc}", markup=False)
    raise typer.Exit(int(ExitCode.INVALID_INVENTORY))


def _fail_values(exc: ValidationError) -> NoReturn:
    """A value out of the model's range (a design's `gpus=-1`): each named with its field, exit 3 like a plan
    error, never a traceback."""
    for e in exc.errors(include_url=False)[:20]:
        where = ".".join(str(p) for p in e["loc"])
        err.print(f"plan error: {where}: {echo(e.get('input'))}: {e['msg']}", markup=False)
    raise typer.Exit(int(ExitCode.INVALID_INVENTORY))


def _base(env: Path) -> tuple[Inventory, Source, dict[str, list[int]], Frozen]:
    """The environment without its previous `cabling.generated.yaml`, each list item's source index, and
    what that file froze (the re-plan keeps it where still valid)."""
    inv, source = load_inventory_or_fail(env)
    generated = (env / GENERATED_FILE).resolve() if env.is_dir() else None
    keep: dict[str, list[int]] = {}
    update: dict[str, Any] = {}
    dropped: dict[str, list[Any]] = {}
    for key in _LISTS:
        items = getattr(inv, key)
        drop = {i for seg in source.list_segments.get(key, []) if seg.file.resolve() == generated
                for i in range(seg.start, seg.start + seg.count)}
        keep[key] = [i for i in range(len(items)) if i not in drop]
        dropped[key] = [items[i] for i in sorted(drop)]
        if drop:
            update[key] = [items[i] for i in keep[key]]
    frozen = Frozen.of_items(*(dropped[k] for k in _LISTS))
    return (inv.model_copy(update=update) if update else inv), source, keep, frozen


def _checked(env: Path, renumber: bool = False, write: bool = False,
             advance: Callable[[str], None] = no_progress) -> tuple[Merged | None, Inventory, Index]:
    """Load, plan and check ENV. `renumber`: the index's addresses ignore addresses.generated.yaml;
    `write`: refuse when another file holds the `allocations` section that file is written with.
    `advance` is called after each of the three (a progress bar's step)."""
    base, source, keep, frozen = _base(env)
    advance("loaded")
    elsewhere = addresses_file.misplaced(env, source) if write else None
    if elsewhere is not None:
        err.print(f"{elsewhere}: allocations is written by `plan --write` into {env / addresses_file.GENERATED}; "
                  "move it there first", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    merged: Merged | None = None
    inv = base
    if base.fabric is not None:
        try:
            merged = merge_plan(base, plan_fabric(base, frozen=frozen))
        except PlanError as exc:
            _fail_plan(exc)
        inv = merged.inv
    advance("planned")
    index = Index(inv)
    if renumber:
        index.addresses = allocate(index, renumber=True)  # the cached property, set before anything reads it
    issues = run_checks(index)
    advance("checked")
    if issues:
        located = []
        for issue in issues:
            key, pos = (issue.path[0], issue.path[1]) if len(issue.path) > 1 else (None, None)
            if isinstance(key, str) and isinstance(pos, int) and key in keep:
                if pos >= len(keep[key]):
                    gen = InventoryIssue(issue.path, f"(generated) {issue.message}", "<plan>", rule=issue.rule)
                    located.append(gen)
                    continue
                path = (key, keep[key][pos], *issue.path[2:])
                located.append(InventoryIssue(path, issue.message, rule=issue.rule).located(*source.locate(path)))
            else:
                located.append(issue.located(*source.locate(issue.path)))
        fail_inventory(InventoryInvalid(located))
    return merged, inv, index


@app.command("show")
def show(
    env: Path = typer.Argument(..., help="environment directory, e.g. inventories/prod"),
    fmt: Format = typer.Option(Format.text, "--format", help="text or json"),
    write: bool = typer.Option(False, "--write", help=f"freeze the plan into ENV/{GENERATED_FILE} and the "
                               f"addresses into ENV/{addresses_file.GENERATED}"),
    renumber: bool = typer.Option(False, "--renumber", help="reallocate every address by node-list order, "
                                  "ignoring the frozen ones, and show what moves (written only with --write)"),
    export: Path | None = typer.Option(None, "--export", help="write plan.json, bom.csv and cables.csv here"),
) -> None:
    """Plan ENV's fabric from its `fabric` spec (or check the declared one) and print a summary."""
    with locked(env, write and env.is_dir()):  # --write: read, plan and write under ENV's lock
        _show(env, fmt, write, renumber, export)


def _show(env: Path, fmt: Format, write: bool, renumber: bool, export: Path | None) -> None:
    if export is not None:
        check_output_path(export, "--export", directory=True)
    # a bar on a terminal's stderr only (a 2,048-node plan takes seconds): load, plan, check, the fabric's
    # checks, then writing and exporting when asked
    with progress(f"plan {env.name}", total=4 + write + (export is not None)) as advance:
        summary, merged, report = _planned(env, write, renumber, export, advance)
    if fmt is Format.json:
        print_json(summary)
    else:
        for line in summary_lines(summary):
            out.print(line, markup=False)
        for move in summary.get("renumbered", ()):
            out.print(f"renumber {move['node']} {move['address']}: {move['old']} -> {move['new']}", markup=False)
        if renumber:
            out.print(f"{len(summary['renumbered'])} address(es) move"
                      + ("" if write else " (nothing written: add --write)"), markup=False)
        if "written" in summary:
            out.print(f"wrote {summary['written']}", markup=False)
        if "addresses_written" in summary:
            out.print(f"wrote {summary['addresses_written']}"
                      + ("" if merged is not None else " (no `fabric` section: addresses only)"), markup=False)
    if not report.ok:
        raise typer.Exit(int(ExitCode.FINDINGS))


def _planned(env: Path, write: bool, renumber: bool, export: Path | None, advance: Callable[[str], None]
             ) -> tuple[dict[str, Any], Merged | None, PlanReport]:
    """`plan show`'s work: load, plan, check; write and export when asked. The summary, the merge, the report."""
    with gc_paused():  # 10^5-10^6 small acyclic objects: collector passes would dominate
        merged, inv, index = _checked(env, renumber, write, advance)
        report = check_plan(index)
    advance("fabric checked")
    summary = summary_dict(report, merged.plan.design if merged else None, merged.deviations if merged else ())
    summary["environment"] = str(env)
    if merged is not None and merged.plan.frozen:
        summary["changes"] = changes(merged.plan.frozen, merged.plan).to_dict()
    if renumber:
        summary["renumbered"] = [{"node": n, "address": pool, "old": _ip(index, a), "new": _ip(index, b)}
                                 for n, pool, a, b in moves(allocate(index), index.addresses, list(index.nodes))]
    if write:
        if not env.is_dir():
            err.print(f"{env}: --write needs an environment directory")
            raise typer.Exit(int(ExitCode.INVALID_INVENTORY))
        if merged is not None:
            target = env / GENERATED_FILE
            write_atomic(target, generated_yaml(merged.switches, merged.cables, merged.patch_panels, merged.trunks))
            summary["written"] = str(target)
        summary["addresses_written"] = str(addresses_file.write(env, index))
        advance("written")
    if export is not None:
        with gc_paused():
            _export(export, summary, inv, index)
        advance("exported")
    return summary, merged, report


def _ip(index: Index, value: int | None) -> str | None:
    return None if value is None else index.addresses.text(value)


def _export(folder: Path, summary: dict[str, Any], inv: Inventory, index: Index) -> None:
    write_atomic(folder / "plan.json", json.dumps(summary, indent=2) + "\n")
    write_atomic(folder / "bom.csv", _bom_csv(index, _prices(None, inv)))
    rows: list[list[object]] = [["id", "a", "b", "media", "length_m", "fiber_type", "trunk", "lane_group"]]
    rows += [[c.id, str(c.a), str(c.b), c.media, f"{c.length_m:g}", c.fiber_type or "", c.trunk or "",
              "" if c.lane_group is None else c.lane_group] for c in inv.cables]
    write_atomic(folder / "cables.csv", csv_text(rows))


def _prices(path: Path | None, inv: Inventory | None) -> PriceTable:
    if path is None:
        return inv.prices if inv is not None and inv.prices is not None else EXAMPLE_PRICES
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        return PriceTable.model_validate(data.get("prices", data) if isinstance(data, dict) else data)
    except (OSError, ValueError, yaml.YAMLError, ValidationError) as exc:  # ValueError: not UTF-8
        err.print(f"{path}: not a price table: {exc}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None


def _bom_csv(index: Index, prices: PriceTable) -> str:
    bom = bill_of_materials(index, prices)
    return csv_text([
        ["category", "item", "length_m", "quantity", f"unit_price_{bom.currency}", f"total_{bom.currency}"],
        *bom_rows(bom),
        ["total", "example prices" if bom.example_prices else "", "", "", "", f"{bom.total:.2f}"],
    ])


class BomFormat(StrEnum):
    text = "text"
    json = "json"
    csv = "csv"


@app.command("bom")
def bom(
    env: Path = typer.Argument(..., help="environment directory"),
    prices: Path | None = typer.Option(None, "--prices", help="YAML price table (default: the inventory's, "
                                       "else the example prices)"),
    fmt: BomFormat = typer.Option(BomFormat.text, "--format", help="text, json or csv"),
) -> None:
    """Bill of materials of ENV's fabric (planned or declared), priced."""
    _, inv, index = _checked(env)
    table = _prices(prices, inv)
    if fmt is BomFormat.csv:
        print(_bom_csv(index, table), end="")
        return
    result = bill_of_materials(index, table)
    if fmt is BomFormat.json:
        print_json({"currency": result.currency, "example_prices": result.example_prices, "total": result.total,
                    "by_category": result.by_category(), "unpriced": result.unpriced,
                    "lines": [{"category": ln.category, "item": ln.item, "length_m": ln.length_m,
                               "quantity": ln.quantity, "unit_price": ln.unit_price, "total": ln.total}
                              for ln in result.lines]})
        return
    t = Table(title=f"{env}: bill of materials" + (" (EXAMPLE prices, not a quote)" if result.example_prices else ""),
              title_justify="left")
    for col in ("category", "item", "length m", "qty", f"unit {result.currency}", f"total {result.currency}"):
        t.add_column(col, justify="left" if col in ("category", "item") else "right")
    for row in bom_rows(result):
        t.add_row(*row)
    t.add_row("total", "", "", "", "", f"{result.total:,.2f}")
    out.print(t)


@app.command("storage")
def storage_cmd(
    env: Path = typer.Argument(..., help="environment directory"),
    prices: Path | None = typer.Option(None, "--prices", help="YAML price table (default: the inventory's, "
                                       "else the example prices)"),
    fmt: Format = typer.Option(Format.text, "--format", help="text or json"),
) -> None:
    """Size ENV's storage tiers: capacity, OST devices vs OSS links vs GPU demand, the bottleneck, the three tiers."""
    from ..plan.storage import storage_report  # only this command needs it

    _, inv, index = _checked(env)
    reports = storage_report(index, _prices(prices, inv))
    if fmt is Format.json:
        print_json({"environment": str(env), "settings": inv.storage_sizing.model_dump(mode="json"),
                    "file_systems": [r.to_dict() for r in reports]})
        return
    if not reports:
        out.print(f"{env}: no Lustre file system declares its targets (lustre[].targets): nothing to size",
                  markup=False)
        return
    for r in reports:
        _print_storage(r)


def _tb(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.1f}"


def _print_storage(r: FsStorage) -> None:
    overhead = 100 * (1 - r.ost_usable_tb / r.ost_raw_tb) if r.ost_raw_tb else 0.0
    out.print(f"{r.fs}: {', '.join(f'{n} {k.upper()}' for k, n in sorted(r.targets.items()))}", markup=False)
    out.print(f"  capacity: OST {r.ost_raw_tb:,.1f} TB raw, {r.ost_usable_tb:,.1f} TB usable ({overhead:.0f}% to "
              f"RAID); MDT {r.mdt_raw_tb:,.1f} TB raw, {r.mdt_usable_tb:,.1f} TB usable", markup=False)
    out.print(f"  OST devices {r.devices_gbps:,.1f} GB/s | OSS links {r.links_gbps:,.1f} GB/s "
              f"({r.degraded_gbps:,.1f} with one server failed over) | GPU demand {r.demand_gbps:,.1f} GB/s "
              f"({r.gpus:,} GPUs)", markup=False)
    out.print(f"  bottleneck: {r.bottleneck}: {r.verdict}", markup=False)
    t = Table(title=f"{r.fs}: storage tiers" + (" (EXAMPLE prices, not a quote)" if r.example_prices else ""),
              title_justify="left")
    t.add_column("")
    for tier in r.tiers:
        t.add_column(tier.name, justify="right")
    rows: list[tuple[str, Any]] = [
        ("what", lambda x: x.what), ("raw TB", lambda x: _tb(x.raw_tb)), ("usable TB", lambda x: _tb(x.usable_tb)),
        ("read GB/s", lambda x: _tb(x.read_gbps)), ("latency", lambda x: x.latency.split(":")[0]),
        (f"cost {r.currency}", lambda x: "unpriced" if x.cost is None else f"{x.cost:,.0f}"),
    ]
    for label, get in rows:
        t.add_row(label, *(str(get(x)) for x in r.tiers))
    out.print(t)
    for note in r.notes:
        out.print(f"note: {note}", markup=False)


@app.command("size")
def size_cmd(
    nodes: int = typer.Option(..., "--nodes", help="fabric nodes"),
    ports_per_node: int = typer.Option(..., "--ports-per-node", help="HCA ports per node (= rails)"),
    radix: int = typer.Option(..., "--radix", help="leaf switch ports"),
    spine_radix: int | None = typer.Option(None, "--spine-radix", min=1),
    core_radix: int | None = typer.Option(None, "--core-radix", min=1),
    rate: str | None = typer.Option(None, "--rate", help="host link rate (default: the switch's)"),
    oversubscription: str = typer.Option("1:1", "--oversubscription", help="1:1, 2:1, 3:1 or 4:1"),
    su_size: int | None = typer.Option(None, "--su-size", min=1, help="nodes per scalable unit (wider than a leaf: "
                                       "two or more leaves per rail)"),
    leaves_per_rail: int | None = typer.Option(None, "--leaves-per-rail", min=1, help="leaves per rail in a unit "
                                               "(default: the fewest that hold --su-size)"),
    planes: str | None = typer.Option(None, "--planes", help="rail planes: rail (one per rail) or N rails per "
                                      "plane; a two-tier Clos per plane, planes share no switch"),
    tiers: str = typer.Option("auto", "--tiers", help="auto, 2 or 3"),
    max_sus: int | None = typer.Option(None, "--max-sus", min=1, help="scalable units to size spines/cores for"),
    spines: int | None = typer.Option(None, "--spines", min=1, help="spines per pod"),
    split: bool = typer.Option(False, "--split", help="split switch ports (NDR -> 2 x NDR200)"),
    fmt: Format = typer.Option(Format.text, "--format", help="text or json"),
) -> None:
    """Size a fabric without an inventory: the real generator on a synthetic floor."""
    if oversubscription not in ("1:1", "2:1", "3:1", "4:1") or tiers not in ("auto", "2", "3"):
        err.print("--oversubscription must be 1:1, 2:1, 3:1 or 4:1 and --tiers auto, 2 or 3")
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    if planes is not None and planes != "rail" and not (planes.isdigit() and int(planes) >= 1):
        err.print("--planes must be rail or a number of rails per plane (at least 1)")
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    try:
        req = SizeRequest(nodes=nodes, ports_per_node=ports_per_node, radix=radix, spine_radix=spine_radix,
                          core_radix=core_radix, rate=rate, oversubscription=oversubscription,  # type: ignore[arg-type]
                          su_size=su_size, tiers="auto" if tiers == "auto" else int(tiers),  # type: ignore[arg-type]
                          max_sus=max_sus, spines=spines, split=split, leaves_per_rail=leaves_per_rail,
                          planes=None if planes is None else "rail" if planes == "rail" else int(planes))
        data = size_dict(size(req))
    except PlanError as exc:
        _fail_plan(exc)
    except ValidationError as exc:
        _fail_values(exc)
    if fmt is Format.json:
        print_json(data)
        return
    sw, cb = data["switches"], data["cables"]
    out.print(f"{nodes} nodes x {ports_per_node} ports at {data['rate']} on {data['models']['leaf']} leaves: "
              f"{data['tiers']} tiers, {data['scalable_units']} scalable unit(s) of {data['su_size']}"
              + (f", {data['leaves_per_rail']} leaves per rail" if data["leaves_per_rail"] > 1 else "")
              + (f", {data['planes']} rail planes of {data['rails_per_plane']} rail(s)" if data["planes"] > 1 else ""),
              markup=False)
    out.print(f"switches: {sw['leaf']} leaf, {sw['spine']} spine, {sw['core']} core ({sum(sw.values())} in all)")
    out.print(f"cables: {cb['node_leaf']} node-leaf, {cb['leaf_spine']} leaf-spine, {cb['spine_core']} spine-core")
    out.print(f"oversubscription {data['oversubscription']} ({data['oversubscription_achieved']} achieved); "
              f"bisection {data['bisection_gbps']:,.0f} Gb/s"
              + (f" within planes, {data['bisection_across_rails_gbps']:,.0f} across them (cross-plane traffic "
                 "stays in the node: NVLink, PXN)" if data["planes"] > 1 else "")
              + f"; worst case {data['max_switch_hops']} switch hops")
    for note in data["notes"]:  # what the sizing decided beyond the request (rail planes not needed)
        out.print(f"note: {note}", markup=False)


@app.command("compare")
def compare_cmd(
    nodes: int = typer.Option(100, "--nodes", min=1, help="nodes to plan each design for"),
    design: list[str] = typer.Option([], "--design", help="A, B, C (the design brief's options) or "
                                     "NAME[=BASE]:gpu=..,gpus=..,hca=..,hcas=..,rate=..,switch=..,ratio=..,su=..,planes=rail|N"),
    prices: Path | None = typer.Option(None, "--prices", help="YAML price table (default: example prices)"),
    fmt: Format = typer.Option(Format.text, "--format", help="text or json"),
) -> None:
    """Compare fabric designs side by side (default: the design brief's options A, B and C)."""
    try:
        options = [parse_option(d) for d in (design or ["A", "B", "C"])]
        results = [r.to_dict() for r in compare(options, _prices(prices, None), nodes)]
    except PlanError as exc:
        _fail_plan(exc)
    except ValidationError as exc:
        _fail_values(exc)
    if fmt is Format.json:
        print_json({"nodes": nodes, "designs": results})
        return
    example = any(r["example_prices"] for r in results)
    t = Table(title=f"designs for {nodes} nodes" + (" (EXAMPLE prices, not a quote)" if example else ""),
              title_justify="left")
    t.add_column("")
    for r in results:
        t.add_column(f"{r['option']}: {r['title']}", justify="right")
    rows: list[tuple[str, Any]] = [
        ("node", lambda r: r["node"]), ("rate / switch", lambda r: f"{r['rate']} / {r['switch']}"),
        ("oversubscription", lambda r: f"{r['oversubscription']} ({r['oversubscription_achieved']} achieved)"),
        ("tiers", lambda r: r["tiers"]),
        ("switches leaf/spine/core", lambda r: "/".join(str(v) for v in r["switches"].values())),
        ("cables node/leaf-spine/spine-core", lambda r: "/".join(str(v) for v in r["cables"].values())),
        ("planes", lambda r: r["planes"]),
        ("optics (transceivers)", lambda r: f"{r['optics']:,}"),
        ("bisection Gb/s (within planes)", lambda r: f"{r['bisection_gbps']:,.0f}"),
        ("bisection across planes Gb/s", lambda r: f"{r['bisection_across_planes_gbps']:,.0f}"),
        ("bisection per node Gb/s", lambda r: f"{r['bisection_gbps_per_node']:,.0f}"),
        ("fabric cost / 100 nodes", lambda r: f"{r['cost_per_100_nodes']['fabric']:,.0f} {r['currency']}"),
        ("GPU cost / 100 nodes", lambda r: f"{r['cost_per_100_nodes']['gpus']:,.0f} {r['currency']}"),
        ("total / 100 nodes", lambda r: f"{r['cost_per_100_nodes']['total']:,.0f} {r['currency']}"),
    ]
    for label, get in rows:
        t.add_row(label, *(str(get(r)) for r in results))
    out.print(t)
    for r in results:  # what the sizing decided beyond the design (rail planes not needed)
        for note in r["notes"]:
            out.print(f"note ({r['option']}): {note}", markup=False)
