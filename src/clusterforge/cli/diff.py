"""`clusterforge diff OLD NEW` (or `diff ENV --rev REV`): the day-2 change plan between two inventories."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import typer

from ..day2.steps import ChangePlan
from ..inventory.gitsnap import GitError, env_at_revision
from ..model.index import Index
from ..util.errors import ExitCode
from .console import Format, err, out, print_json, print_table
from .loading import check_output_path, load_or_fail


def diff(
    old: Path = typer.Argument(..., help="the inventory as built (with --rev: the environment in git)"),
    new: Path | None = typer.Argument(None, help="the inventory as wanted (default: OLD's working copy)"),
    rev: str | None = typer.Option(None, "--rev", help="read OLD as committed at this git revision"),
    deployed: bool = typer.Option(False, "--deployed",
                                  help="--rev of the last deploy on record (the lab's, else state/<env>)"),
    record: Path | None = typer.Option(None, "--record", help="deploy record directory (--deployed, --output)"),
    fmt: Format = typer.Option(Format.text, "--format", help="text or json"),
    output: Path | None = typer.Option(None, "--output", "-o", help="also write the plan file for `apply`"),
    exit_code: bool = typer.Option(False, "--exit-code", help="exit 1 when there is anything to do"),
) -> None:
    """Devices, cables and hosts that change, and the ordered plan: drain, recable, deploy rack by rack,
    reconfigure the subnet manager, validate, resume."""
    from ..day2 import change_plan

    if output is not None:
        check_output_path(output, "--output", directory=False)
    deployed_digest = None
    if deployed:
        rev, deployed_digest = _deployed_rev(old, record)
    if new is None:
        if rev is None:
            err.print("diff: give NEW, or --rev REV to compare ENV with a git revision", markup=False)
            raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
        new = old
    with ExitStack() as stack:
        try:
            old_dir = stack.enter_context(env_at_revision(old, rev)) if rev is not None else old
        except GitError as exc:
            err.print(f"diff: {old} at {rev}: {exc}", markup=False)
            raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
        indexes = []
        checked = []
        for label, path in (("old", old_dir), ("new", new)):
            heading = f"the {label} inventory{f' (at {rev})' if label == 'old' and rev else ''} is invalid:"
            checked.append(load_or_fail(path, heading=heading))
            indexes.append(checked[-1].index)
        if deployed_digest is not None:
            from ..deploy.record import inventory_digest

            if inventory_digest(old_dir) != deployed_digest:
                err.print(f"note: the last deploy ran with uncommitted inventory changes; comparing with {rev}",
                          markup=False)
        from ..day2.firmware import FirmwareRefused

        try:
            plan = change_plan(indexes[0], indexes[1], str(new), new.resolve().name)
        except FirmwareRefused as exc:  # a downgrade the new inventory does not allow: the pin, where it is
            file, line, _ = checked[1].source.locate(exc.path)
            where = f"{file}:{line}: " if file and line else f"{file}: " if file else ""
            err.print(f"diff: {where}{exc}", markup=False)
            raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
        _verified(plan, indexes[0], indexes[1])
    data = plan.to_dict()
    if output is not None:  # the plan file `clusterforge apply` carries out (day2/planfile.py)
        from ..day2.planfile import plan_document, record_dir, write_plan_file

        write_plan_file(output, plan_document(
            data, env=new, new_inv=indexes[1].inv, old_inv=indexes[0].inv, old_path=old, old_rev=rev,
            record=record_dir(new, record)))
    if fmt is Format.json:
        print_json(data)
    else:
        print_plan(plan)
    if exit_code and not plan.empty:
        raise typer.Exit(int(ExitCode.FAILURE))


def print_plan(plan: ChangePlan) -> None:
    """The summary and warnings as lines, then the steps as a table grouped by rack (or fabric-wide phase).
    Piped, the table is as wide as its widest row (nothing wrapped: a step stays greppable)."""
    import shlex

    from rich.table import Table
    from rich.text import Text

    lines = plan.lines()
    for line in lines[: 1 + len(plan.warnings)] if not plan.empty else lines:
        out.print(line, markup=False)
    if plan.empty:
        return
    table = Table(box=None, pad_edge=False, header_style="bold", show_edge=False)
    table.add_column("#", justify="right")
    for name in ("rack / phase", "phase", "subject", "action", "command"):
        table.add_column(name)
    heading = None
    for step in plan.steps:
        head = f"rack {step.rack}" if step.rack else step.phase
        if heading is not None and head != heading:
            table.add_section()
        phase = step.phase if step.group is None else f"{step.phase} (group {step.group})"  # run together
        cells = (str(step.n), head if head != heading else "", phase, step.subject, step.action,
                 f"$ {shlex.join(step.argv)}" if step.argv else "")
        table.add_row(*(Text(c) for c in cells))  # inventory text is data, never markup
        heading = head
    print_table(table)


def _verified(plan: ChangePlan, old: Index, new: Index) -> None:
    """Replay the plan on a model of the floor and fabric (day2/verify.py): a plan that breaks a rule is
    a bug of the planner, reported as such and never printed."""
    from ..day2.verify import verify

    violations = verify(plan, old, new)
    if violations:
        err.print(f"internal error: the change plan breaks {len(violations)} rule(s) of the plan verifier; "
                  "it is not printed (please report this with both inventories):", markup=False)
        for v in violations[:20]:
            err.print(f"  {v}", markup=False)
        raise typer.Exit(int(ExitCode.INTERNAL))


def _deployed_rev(env: Path, record: Path | None) -> tuple[str, str | None]:
    """The git commit (and inventory digest) of the newest deploy on record for `env`."""
    from ..day2.planfile import record_dir
    from ..deploy.record import RecordError, last_deploy

    where = record_dir(env, record)
    try:
        run = last_deploy(where)
    except RecordError as exc:
        err.print(f"diff: {exc}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    if run is None:
        err.print(f"diff: no deploy with a git commit on record in {where}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    digest = run.get("inventory")
    return str(run["commit"]), digest if isinstance(digest, str) else None
