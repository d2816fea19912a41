"""`clusterforge deploy ENV`: install and configure every component from the inventory."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ..deploy.confirm import needs_confirmation, prompt, refusal
from ..inventory.selection import SelectionError, limit_tokens
from ..rehearsal import env as labenv
from ..util.errors import ExitCode, InventoryInvalid
from .console import Format, err, out, print_json, print_table
from .loading import check_output_path, fail_inventory, load_or_fail
from .progress import HostProgress, host_progress

if TYPE_CHECKING:
    from ..deploy.api import DeployOutcome, DeployRequest
    from ..deploy.runner import HostResult


class Engine(StrEnum):
    pyinfra = "pyinfra"
    ansible = "ansible"


def deploy_cmd(
    env: Path = typer.Argument(..., help="environment directory, e.g. inventories/lab"),
    engine: Engine = typer.Option(Engine.pyinfra, "--engine", help="pyinfra (default) or ansible"),
    limit: list[str] = typer.Option([], "--limit", help="node, rack, role or suNN, or a range of them: "
                                    "gpu[0001-0512] (repeat or comma-separate)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="read every host's state over SSH (connect timeout "
                                 "10 s: an unreachable host is reported, never waited for) and show the per-host "
                                 "diffs and package changes; changes nothing"),
    batch: int = typer.Option(0, "--batch", min=0, help="hosts per rolling batch (0: all at once)"),
    max_fail_percent: int = typer.Option(100, "--max-fail-percent", min=0, max=100,
                                         help="stop starting batches once more hosts than this failed"),
    component: list[str] = typer.Option([], "--component", help="only these components (repeatable)"),
    lab: Path | None = typer.Option(None, "--lab", help="lab state directory: deploy to the lab's containers"),
    no_lab: bool = typer.Option(False, "--no-lab", help="deploy to the inventory's hosts even when a lab of this "
                                "environment is up (by default a running lab is the target)"),
    yes: bool = typer.Option(False, "--yes", help="a real deploy to real hosts without asking (scripts; "
                             "CONFIRM=1 in make). Without it the changes are shown first and confirmed in a "
                             "terminal; with no terminal the run is refused (exit 2)"),
    plan_file: Path | None = typer.Option(None, "--plan-file", help="where to write the plan/result JSON (every "
                                          "host in full; default out/<env>/deploy-plan.json or deploy-result.json)"),
    junit: Path | None = typer.Option(None, "--junit", help="also write a JUnit XML report: one test case per host"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress and no change lines: the summary (one "
                               "line per group of hosts with one outcome) and the totals line only"),
    diffs: bool = typer.Option(True, "--diffs/--no-diffs", help="print file diffs"),
    changed: bool = typer.Option(False, "--changed",
                                 help="only hosts and components whose desired state changed since the last deploy "
                                      "on record (day-2)"),
    record: Path | None = typer.Option(None, "--record", help="deploy record directory for the inventory's hosts "
                                       "(default state/<env>, or $CLUSTERFORGE_STATE_DIR/<env>; a lab keeps its own)"),
    fmt: Format = typer.Option(Format.text, "--format", help="text or json (the plan/result document on stdout)"),
) -> None:
    """Deploy the inventory (pyinfra or Ansible); hosts with one outcome fold into one line (`gpu[0001-2048]
    (2,048 hosts): 47 changes`), every host in full in the plan file; exit 1 when a host failed, 5 unreachable."""
    # the deploy engines (pyinfra, gevent, ansible-core) take 0.5 s to import: only when deploying
    from ..deploy.api import EXIT_USAGE, DeployError, DeployRequest
    from ..deploy.record import default_dir
    from ..deploy.report import fold_reboots, format_changes, to_json, to_junit, write_plan
    from ..rehearsal.stage import LabStage
    from ..util.fsutil import write_atomic

    if junit is not None:
        check_output_path(junit, "--junit", directory=False)
    # paramiko logs each failed connection's traceback from its transport thread (20 lines a host, on the
    # terminal when logging is not configured): the host's result already says why, once, in the summary
    quiet_paramiko = logging.getLogger("paramiko")
    if not any(isinstance(h, logging.NullHandler) for h in quiet_paramiko.handlers):
        quiet_paramiko.addHandler(logging.NullHandler())
    try:  # an empty --limit ('' from an unset $RACK) selects no host: refused, never "every host"
        tokens = limit_tokens(limit) if limit else ()
    except SelectionError as exc:
        err.print(f"deploy: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    if lab is not None and no_lab:
        err.print("deploy: --lab and --no-lab contradict each other", markup=False)
        raise typer.Exit(EXIT_USAGE)
    if lab is None and not no_lab and labenv.running(env) is not None:
        lab = labenv.paths(env).state_dir
        err.print(f"deploying to the lab of {env} ({lab})", markup=False)
    req = DeployRequest(dry_run=dry_run, limit=tokens, batch=batch, max_fail_percent=max_fail_percent,
                        components=tuple(component) or None, stage=None if lab is None else LabStage(lab),
                        changed_only=changed, record_dir=record or default_dir(env))
    if needs_confirmation(lab=lab is not None, dry_run=dry_run, yes=yes):
        _confirm(env, req, engine, diffs)

    try:
        with host_progress(f"{'dry run' if dry_run else 'deploy'} {env.name}", quiet=quiet,
                           lines=fmt is Format.text) as bar:
            outcome = _run_engine(env, req, engine, bar)
    except InventoryInvalid as exc:
        fail_inventory(exc)
    except DeployError as exc:
        err.print(f"deploy: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    data = to_json(outcome.results, engine=engine.value, dry_run=dry_run, env=env.name)
    data["reboots"] = [{"host": o.host, "done": o.done, "message": o.message} for o in outcome.reboots]
    data["seconds"] = round(outcome.seconds, 3)
    target = plan_file or Path("out") / env.name / ("deploy-plan.json" if dry_run else "deploy-result.json")
    write_plan(target, data)
    written = f"{'plan' if dry_run else 'result'} written to {target}"
    if junit is not None:
        write_atomic(junit, to_junit(outcome.results, env=env.name, engine=engine.value, dry_run=dry_run))
        written += f", JUnit report to {junit}"
    if fmt is Format.json:
        print_json(data)
        err.print(f"{written} ({outcome.seconds:.1f}s)", markup=False)
        raise typer.Exit(outcome.exit_code)
    if not quiet:
        changes = format_changes(outcome.results, diffs=diffs)
        if changes:
            out.print(changes, markup=False)
        for line in fold_reboots(outcome.reboots):
            out.print(line, markup=False)
        if changed and not outcome.results:
            out.print("nothing changed since the last deploy on record", markup=False)
    for note in outcome.notes:
        out.print(note, markup=False)
    print_summary(outcome.results)
    if not quiet:
        out.print(f"{written} ({outcome.seconds:.1f}s)", markup=False)
    raise typer.Exit(outcome.exit_code)


def _run_engine(env: Path, req: DeployRequest, engine: Engine, bar: HostProgress | None = None) -> DeployOutcome:
    """The deploy by ENGINE, each host told to BAR as it finishes (Ansible's all at the end)."""
    progress: Callable[[HostResult], None] | None = None if bar is None else (lambda r: bar.done(r.failed))
    started = None if bar is None else bar.start
    if engine is Engine.ansible:
        from ..deploy.ansible_api import deploy_ansible

        return deploy_ansible(env, req, progress, started)
    from ..deploy.api import deploy

    return deploy(env, req, progress=progress, started=started)


def _confirm(env: Path, req: DeployRequest, engine: Engine, diffs: bool) -> None:
    """Before a real run on real hosts: refuse without a terminal (before any connection), else show the
    dry run's changes and ask; anything but yes stops here (exit 2)."""
    import dataclasses
    import sys

    from ..deploy.api import DeployError, select_hosts
    from ..deploy.report import format_changes

    checked = load_or_fail(env)
    try:
        hosts = select_hosts(checked.index, req.limit)
    except DeployError as exc:
        err.print(f"deploy: {exc}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    why = refusal(env.name, len(hosts), tty=sys.stdin.isatty())
    if why is not None:
        err.print(f"deploy: {why}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    err.print(f"deploy to {env.name}: reading the state of {len(hosts):,} host(s) first (dry run)", markup=False)
    with host_progress(f"dry run {env.name}") as bar:
        outcome = _run_engine(env, dataclasses.replace(req, dry_run=True), engine, bar)
    changes = format_changes(outcome.results, diffs=diffs)
    if changes:
        out.print(changes, markup=False)
    print_summary(outcome.results)
    if not typer.confirm(prompt(env.name, outcome.results), default=False):
        err.print("deploy: not confirmed; nothing changed", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))


def print_summary(results: Sequence[HostResult]) -> None:
    """The summary as a table, one row per group of hosts with one outcome (`gpu[0001-2048] (2,048 hosts)`,
    failed and unreachable ones last, each group once), then the totals line (`N host(s), M change(s): ok 3,
    changed 1`)."""
    from rich.table import Table

    from ..deploy.report import summary_rows, totals_line

    if results:
        table = Table(box=None, pad_edge=False, header_style="bold")
        for name, justify in (("HOST", "left"), ("STATUS", "left"), ("CHANGES", "right"), ("SECONDS", "right"),
                              ("DETAIL", "left")):
            # a node set is never cut short on a narrow terminal: it folds onto the next line
            table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
        for row in summary_rows(results):
            table.add_row(*row)
        print_table(table)
    out.print(totals_line(results), markup=False)
