"""`clusterforge accept ENV --plan | --from DIR`: the acceptance run the model implies, and its judgement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from ..accept.expect import expect
from ..accept.judge import judge
from ..accept.plan import AcceptPlan, accept_plan
from ..accept.route_plan import MAX_ROUNDS, ROUNDS, RoutedCoverage, routed_plan
from ..collect.store import read_lines
from ..parse import ParseError, ibroute
from ..util.echo import one_line
from ..util.errors import ExitCode
from ..util.fsutil import fresh_directory, new_directory_problem, terminate_cleanly, write_atomic
from ..validate.report import exit_code, to_json, to_junit
from ..validate.routes import Routes
from ..validate.run import Report
from .console import Format, err, out, print_json
from .loading import check_output_path, load_or_fail


def accept(
    env: Path = typer.Argument(..., help="environment directory"),
    plan_only: bool = typer.Option(False, "--plan", help="print the tests, their commands and bounds; run nothing"),
    from_dir: Path | None = typer.Option(None, "--from", help="judge a run's saved outputs (layout: docs/accept.md)"),
    run_dir: Path | None = typer.Option(None, "--run", help="run the tests over SSH (the environment's lab when "
                                        "one is up), save the outputs in this new directory, then judge them"),
    fmt: Format = typer.Option(Format.text, "--format"),
    junit: Path | None = typer.Option(None, "--junit", help="also write a JUnit XML report (with --from)"),
    routes: Path | None = typer.Option(
        None, "--routes", help="the built fabric's forwarding tables: a file of `ibroute <lid>` for every switch "
        "(or `dump_fts`, or OpenSM's opensm-lfts.dump), or OpenSM's dump directory (its opensm-lfts.dump), read as "
        "a stream: the cross-leaf rounds are built from them so that every uplink is crossed; with --from (give it "
        "the same file) each test is judged along its route, so that a slow uplink is named by its cable"),
    rounds: int = typer.Option(
        ROUNDS, "--rounds", min=2, max=MAX_ROUNDS, help="with --routes: the link rounds at most (the first, within "
        "leaves, included); an uplink the rounds have no room for is said with the rounds that cross them all; "
        "give --from the same number as --plan"),
) -> None:
    """The acceptance tests the model implies (DCGM, PCIe, NVLink, ib_write_bw over every cable and uplink,
    NCCL per unit and cluster) with the bound each must reach; --from judges a run's outputs: exit 0 when
    every test passed, 4 when one did not (its finding names the slow part), 2 for a usage error; --run DIR runs
    them over SSH first (on the lab: its LAB-ONLY stand-in tools, `clusterforge lab accept --arm`)."""
    if sum((plan_only, from_dir is not None, run_dir is not None)) != 1:
        err.print("accept: give exactly one of --plan, --from DIR or --run DIR", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    problem = new_directory_problem(run_dir) if run_dir is not None else None
    if problem is not None:
        err.print(f"accept: --run {one_line(str(run_dir))}: {problem}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    if junit is not None:
        check_output_path(junit, "--junit", directory=False)
    checked = load_or_fail(env)
    plan = accept_plan(checked.index)
    routed, tables = None, None
    if routes is not None:
        plan, tables, routed = routed_or_exit(checked.index, plan, routes, rounds)
    if plan_only:
        _print_plan(checked.index, plan, fmt, routed)
        return
    if run_dir is not None:
        _run(env, checked.index, plan, run_dir)
        from_dir = run_dir
    assert from_dir is not None
    if not from_dir.is_dir():
        err.print(f"{from_dir}: not a directory of saved outputs", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    try:
        judged = judge(checked.index, from_dir, plan, tables)
    except ValueError as exc:
        err.print(f"accept: {exc}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    report = Report(findings=judged.findings, hosts_checked=[t.node for t in plan.nodes], fabric_checked=True)
    if junit is not None:
        write_atomic(junit, to_junit(report))
    if fmt is Format.json:
        print_json({**to_json(report), "tests_planned": judged.tests_planned, "tests_run": judged.tests_run,
                    "tests_extra": judged.tests_extra, "routes": str(routed[0]) if routed is not None else None})
    else:
        _print_judged(report, judged.tests_run, judged.tests_planned, judged.tests_extra)
    raise typer.Exit(int(exit_code(report)))


def _run(env: Path, index: Any, plan: AcceptPlan, run_dir: Path) -> None:
    """The plan's tests over SSH into `run_dir`: the environment's lab when one is up for it (its containers at
    their lab addresses, the lab's keys), else the real hosts (management addresses, `deploy`'s SSH settings)."""
    from ..accept.run import run_plan
    from ..rehearsal import env as labenv

    addresses, cfg = labenv.ssh_reach(env, index)
    shown = one_line(str(run_dir))
    try:
        with terminate_cleanly(), fresh_directory(run_dir):
            outcome = run_plan(plan, addresses, cfg, run_dir,
                               on_stage=lambda msg: err.print(f"accept: {msg}", markup=False))
    except KeyboardInterrupt:
        err.print(f"accept: interrupted; nothing kept in {shown} (run the same command again)", markup=False)
        raise typer.Exit(130) from None
    except SystemExit as exc:  # SIGTERM / SIGHUP (terminate_cleanly): 128 + the signal
        err.print(f"accept: ended by a signal; nothing kept in {shown} (run the same command again)", markup=False)
        raise typer.Exit(exc.code if isinstance(exc.code, int) else int(ExitCode.FAILURE)) from None
    except OSError as exc:
        where = one_line(str(exc.filename)) if exc.filename else ""
        failed = Path(exc.filename) if exc.filename else None
        ours = failed is not None and (failed.is_relative_to(run_dir) or run_dir.is_relative_to(failed))
        if ours:
            err.print(f"accept: --run {shown}: cannot write there ({exc.strerror or exc}"
                      + (f": {where}" if where != shown else "") + "); nothing kept", markup=False)
            raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
        err.print(f"accept: {where + ': ' if where else ''}{exc.strerror or exc}; nothing kept in {shown}",
                  markup=False)
        raise typer.Exit(int(ExitCode.FAILURE)) from None
    err.print(f"accept: {len(outcome.written)} output(s) saved in {run_dir}, {len(outcome.missing)} missing",
              markup=False)
    for rel, why in sorted(outcome.missing.items())[:20]:
        err.print(f"  {rel}: {why}", markup=False)
    if len(outcome.missing) > 20:
        err.print(f"  ... and {len(outcome.missing) - 20} more (each is an ACC-NO-DATA finding)", markup=False)


def _print_judged(report: Report, run: int, planned: int, extra: int) -> None:
    from ..validate.report import print_summary

    if not report.findings:
        more = f" (and {extra} link test(s) beyond the plan)" if extra else ""
        out.print(f"accept: passed: {run - extra} of {planned} test outputs read{more}, every one within the "
                  "model's bounds", markup=False)
        return
    print_summary(out, report)


SHOWN = 20
"""The uplinks not crossed that the text lists one by one (a 3-tier fabric under minhop leaves thousands)."""

Routed = tuple[Path, RoutedCoverage, tuple[str, ...]]
"""Where the tables came from, what the plan crosses by them, what in them fit no declared device."""


def routed_or_exit(index: Any, plan: AcceptPlan, where: Path,
                   rounds: int = ROUNDS) -> tuple[AcceptPlan, Routes, Routed]:
    """The plan with the tests the tables call for; a file that is not tables is a usage error naming its line."""
    path = where / "opensm-lfts.dump" if where.is_dir() else where
    try:  # a stream: a 2,048-node fabric's tables are 2 GB of text, read a line at a time into a byte a LID
        tables = ibroute.read(read_lines(path))
    except ParseError as exc:
        err.print(f"accept: --routes {one_line(str(path))}: {exc} (not forwarding tables: ibroute, dump_fts or "
                  "opensm-lfts.dump)", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    except (OSError, ValueError) as exc:
        err.print(f"accept: --routes {one_line(str(path))}: {exc}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    new, resolved, cov = routed_plan(index, plan, tables, rounds=rounds)
    if not resolved.lft:
        err.print(f"accept: --routes {one_line(str(path))}: no table is of a declared switch (GUIDs: learn them "
                  "with `clusterforge learn`)", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    return new, resolved, (path, cov, resolved.problems)


def _coverage(plan: AcceptPlan) -> dict[str, int]:
    cables = {p.cable for p in plan.ports}
    crossed = {c for t in plan.links for c in (t.client.cable, t.server.cable)}
    return {"cables": len(cables), "cables_crossed": len(crossed & cables), "leaves": len(plan.uplinks),
            "uplinks": sum(plan.uplinks.values()), "rounds": plan.rounds}


def _print_plan(index: Any, plan: AcceptPlan, fmt: Format,
                routed: Routed | None = None) -> None:
    exp = expect(index)
    acc = index.inv.acceptance
    uplinks: dict[str, Any] = {"by": "assumption"}
    if routed is not None:
        source, rcov, problems = routed
        uplinks = {"by": "routes", "routes": str(source), "crossing": rcov.crossing, "unreachable": rcov.unreachable,
                   "problems": [*problems, *rcov.problems]}
    if fmt is Format.json:
        print_json({
            "coverage": _coverage(plan),
            "uplinks": uplinks,
            "nodes": [{"node": t.node, "gpus": t.gpus, "commands": t.commands,
                       "nvlink_busbw_gbs": exp.nvlink_busbw_gbs.get(t.node), "pcie_gen": exp.pcie_gen.get(t.node)}
                      for t in plan.nodes],
            "links": [{"round": t.round, "client": t.client.label, "server": t.server.label,
                       "cables": [t.client.cable, t.server.cable], "cross_leaf": t.cross_leaf,
                       "output": f"links/{t.name}", "server_argv": t.argv("<server address>")[0],
                       "client_argv": t.argv("<server address>")[1],
                       "least_gbps": min(exp.link_gbps.get(t.client.label, 0), exp.link_gbps.get(t.server.label, 0))}
                      for t in plan.links],
            "fabric": [{"name": f.name, "nodes": len(f.nodes), "argv": f.argv(), "output": f"nccl/{f.name}",
                        "least_busbw_gbs": exp.fabric_busbw_gbs(f.nodes, acc.nccl_efficiency)} for f in plan.fabric],
        })
        return
    cov = _coverage(plan)
    out.print(f"accept plan: {len(plan.nodes)} GPU node(s): dcgmi diag -r {acc.dcgm_level}, nvidia-smi -q, "
              f"nvidia-smi nvlink --status, all_reduce_perf -g <GPUs>", markup=False)
    out.print(f"  links: {len(plan.links)} ib_write_bw test(s) in {cov['rounds']} round(s) (no port twice in a round); "
              f"{cov['cables_crossed']} of {cov['cables']} node-leaf cables crossed", markup=False)
    if routed is None:
        out.print(f"  uplinks: {cov['leaves']} leaves' {cov['uplinks']} uplinks covered by assumption (each leaf "
                  "loaded by at least as many destinations as it has uplinks; ftree and updn spread them): give "
                  "--routes for the SM's own routes", markup=False)
    else:
        source, rcov, problems = routed
        crossed = sum(1 for names in rcov.crossing.values() if names)
        twice = sum(1 for names in rcov.crossing.values() if len(names) >= 2)
        out.print(f"  uplinks (routes from {source}): {crossed} of {len(rcov.crossing)} crossed by a test, {twice} "
                  "twice", markup=False)
        left = sorted(rcov.unreachable.items())
        for _cable, why in left[:SHOWN]:
            out.print(f"  uplink not crossed: {why}", markup=False)
        if len(left) > SHOWN:
            out.print(f"  ... and {len(left) - SHOWN} more uplinks not crossed (--format json lists each, with why)",
                      markup=False)
        for line in [*problems, *rcov.problems]:
            out.print(f"  routes: {line}", markup=False)
    for f in plan.fabric:
        out.print(f"  nccl {f.name}: {len(f.nodes)} nodes, >= {exp.fabric_busbw_gbs(f.nodes, acc.nccl_efficiency):g} "
                  "GB/s bus bandwidth", markup=False)
    out.print("  outputs: nodes/<node>/<test>, links/<client>--<server>, nccl/<name> (docs/accept.md); "
              "--format json lists every command", markup=False)
