"""`clusterforge learn ENV --from ibnetdiscover.txt`: lock discovered GUIDs into the environment."""

from __future__ import annotations

from pathlib import Path

import typer
import yaml

from ..check.checked import Checked
from ..collect.store import OutputTooLarge, read_output
from ..parse import ParseError, ibnetdiscover
from ..util.errors import ExitCode
from ..util.fsutil import write_atomic
from ..validate.learn import HEADER, Learned, LockChange, LockMerge, existing_locks, merge_locks
from ..validate.learn import learn as run_learn
from .console import Format, err, out, print_json
from .loading import load_or_fail
from .locking import locked

GENERATED = "guids.generated.yaml"


def learn(
    env: Path = typer.Argument(..., help="environment directory"),
    source: Path | None = typer.Option(None, "--from", help="saved ibnetdiscover output (default: run "
                                       "ibnetdiscover on the fabric: the environment's lab when one is up)"),
    require: str | None = typer.Option(None, "--require", help="devices (comma-separated) that must be bound "
                                       "after learning: exit 4 when one is not (a day-2 plan's new hardware)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="show what would be locked, write nothing"),
    replace: bool = typer.Option(
        False, "--replace", help="accept changed GUIDs (replaced hardware) and drop locks not seen in this source"
    ),
    fmt: Format = typer.Option(Format.text, "--format"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="list every device when the output is refused as "
                                 "another fabric's (otherwise one line says so)"),
) -> None:
    """Bind discovered GUIDs to declared switches and HCA ports and merge them into ENV/guids.generated.yaml.

    Locks already there are kept when this source does not show them; a lock seen with another
    GUID (replaced hardware) is refused (exit 1) until re-run with --replace.
    """
    if not env.is_dir():
        err.print(f"{env}: learn writes {GENERATED} into an environment directory; this is not one", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    with locked(env, not dry_run):  # read the locks, merge, write: under ENV's lock
        _learn(env, source, require, dry_run, replace, fmt, verbose)


def _learn(env: Path, source: Path | None, require: str | None, dry_run: bool, replace: bool,
           fmt: Format, verbose: bool) -> None:
    checked = load_or_fail(env)
    target = env / GENERATED
    origin = checked.source.mapping_origin.get("guid_locks")
    if origin is not None and origin.resolve() != target.resolve():
        err.print(f"{origin}: guid_locks is written by learn into {target}; move it there first", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    try:
        topo = ibnetdiscover.parse(read_output(source) if source is not None else _collect(env, checked))
    except (OSError, OutputTooLarge) as exc:
        err.print(f"{source}: {getattr(exc, 'strerror', None) or exc}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    except ParseError as exc:
        err.print(f"{source}:{exc.line_no}: {exc.message}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    learned = run_learn(checked.index, topo)
    merge = merge_locks(existing_locks(checked.index), learned, replace=replace)
    written = not dry_run and not merge.refused
    if written:
        text = HEADER + yaml.safe_dump(merge.as_yaml_data(), sort_keys=False, default_flow_style=False)
        write_atomic(target, text)
    if fmt is Format.json:
        print_json(
            {
                "written": str(target) if written else None,
                "refused": merge.refused,
                "foreign_fabric": merge.foreign,
                "switches": len(learned.switches),
                "hcas": len(learned.hcas),
                "ports": len(learned.ports),
                "how": learned.how,
                "kept": merge.kept,
                "added": [_change_json(c) for c in merge.added],
                "changed": [_change_json(c) for c in merge.changed],
                "dropped": [_change_json(c) for c in merge.dropped],
                "locked_not_seen": [_change_json(c) for c in merge.unseen],
                "unbound": [{"guid": n.guid, "name": n.name} for n in learned.unbound],
                "not_seen": learned.not_seen,
            }
        )
    elif merge.foreign and not verbose:
        _foreign_line(env, source, learned, checked)
    else:
        _print_text(learned, merge, target, written)
        _listed([f"  could not bind {node.kind} {node.guid} {node.name!r}" for node in learned.unbound])
        _listed([f"  declared but not seen: {name}" for name in learned.not_seen])
    if merge.refused:
        raise typer.Exit(int(ExitCode.FAILURE))
    _required(require, learned.switches, learned.hcas)


def _foreign_line(env: Path, source: Path | None, learned: Learned, checked: Checked) -> None:
    """One line for a capture of another fabric: which capture, which inventory; --verbose lists the rest."""
    switches = sum(1 for node in learned.unbound if node.kind == "switch")
    seen = f"{switches} switches, {len(learned.unbound) - switches} HCAs"
    where = str(source) if source is not None else f"ibnetdiscover on {env}'s fabric"
    inv = checked.index.inv
    err.print(
        f"learn: refused: none of the {len(learned.unbound)} devices in {where} ({seen}) belongs to "
        f"inventory {env} ({len(inv.switches)} switches, {len(inv.nodes)} nodes): another fabric, or the wrong "
        "file? Nothing was written (--verbose lists them).",
        markup=False,
        soft_wrap=True,
    )


def _required(require: str | None, switches: dict[str, str], hcas: dict[str, str]) -> None:
    """Exit 4 when a device named by --require was not bound (its GUID would stay a placeholder)."""
    if not require:
        return
    bound = set(switches) | {k.split("/", 1)[0] for k in hcas}
    missing = [d for d in require.split(",") if d and d not in bound]
    if missing:
        err.print(f"learn: not bound, GUID still unknown: {', '.join(missing)}", markup=False)
        raise typer.Exit(int(ExitCode.FINDINGS))


def _collect(env: Path, checked: Checked) -> str:
    """ibnetdiscover run on the fabric (through the lab's fabric container when one is up for `env`)."""
    from ..collect.live import ssh_config, targets
    from ..collect.ssh import collect
    from ..rehearsal import env as labenv

    state = labenv.running(env)
    if state is not None:
        fabric = labenv.collect_targets(state, checked)[1]
        cfg = labenv.collect_config(state)
    else:
        fabric = targets(checked.index)[1]
        cfg = ssh_config(env, checked.index)
    if fabric is None:
        err.print(f"learn: {env} has no host to run ibnetdiscover on; give --from FILE", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    text = collect(cfg, [], fabric).fabric.get("ibnetdiscover")
    if not text:
        err.print("learn: ibnetdiscover gave no output (is the fabric host reachable?); give --from FILE",
                  markup=False)
        raise typer.Exit(int(ExitCode.UNREACHABLE))
    return text


def _change_json(c: LockChange) -> dict[str, str | None]:
    return {"section": c.section, "key": c.key, "locked": c.locked, "seen": c.seen, "note": c.note or None}


def _print_text(learned: Learned, merge: LockMerge, target: Path, written: bool) -> None:
    by_how: dict[str, int] = {}
    for h in learned.how.values():
        by_how[h] = by_how.get(h, 0) + 1
    out.print(
        f"locked {len(learned.switches)} switch(es), {len(learned.hcas)} HCA(s), "
        f"{len(learned.ports)} port GUID(s) ({', '.join(f'{v} by {k}' for k, v in sorted(by_how.items()))})"
        + (f" -> {target}" if written else "")
    )
    unseen = "dropped" if merge.replace else "kept"
    out.print(
        f"locks: {merge.kept} confirmed (same GUID), {len(merge.added)} added, {len(merge.changed)} changed, "
        f"{len(merge.unseen)} not seen in this source: {unseen}",
        markup=False,
    )
    changed = [
        f"  changed  {c.key}: {f'locked {c.locked}' if c.locked else 'not locked'}, seen {c.seen} ({c.note})"
        for c in merge.changed
    ]
    _listed(changed, len(changed))  # every change is shown: each one is refused or accepted by name
    _listed([f"  added    {c.key}: {c.seen}" for c in merge.added])
    what = "dropped " if merge.replace else "kept    "
    _listed([f"  {what} {c.key}: {c.locked} (not seen)" for c in merge.unseen])
    if merge.foreign:
        err.print(
            "refused: this output shows no device of the inventory (another fabric, or the wrong file?). "
            "Nothing was written.",
            markup=False,
        )
    elif merge.refused:
        err.print(
            f"refused: {len(merge.changed)} locked GUID(s) changed. A changed GUID means replaced (or moved) "
            "hardware: confirm the replacement on the floor, then re-run with --replace "
            "(which also drops locks this source does not show). Nothing was written.",
            markup=False,
        )


def _listed(lines: list[str], limit: int = 20) -> None:
    for line in lines[:limit]:
        out.print(line, markup=False)
    if len(lines) > limit:
        out.print(f"  ... and {len(lines) - limit} more (--format json lists all)", markup=False)
