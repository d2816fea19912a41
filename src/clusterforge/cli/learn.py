"""`clusterforge learn ENV --from ibnetdiscover.txt`: lock discovered GUIDs into the environment."""

from __future__ import annotations

from pathlib import Path

import typer
import yaml

from ..api import load_checked
from ..errors import ExitCode, InventoryInvalid
from ..fsutil import write_atomic
from ..parse import ParseError, ibnetdiscover
from ..validate.learn import HEADER
from ..validate.learn import learn as run_learn
from .common import Format, err, fail_inventory, out, print_json

GENERATED = "guids.generated.yaml"


def learn(
    env: Path = typer.Argument(..., help="environment directory"),
    source: Path = typer.Option(..., "--from", help="saved ibnetdiscover output"),
    dry_run: bool = typer.Option(False, "--dry-run", help="show what would be locked, write nothing"),
    fmt: Format = typer.Option(Format.text, "--format"),
) -> None:
    """Bind discovered GUIDs to declared switches and HCA ports and write ENV/guids.generated.yaml."""
    try:
        checked = load_checked(env)
    except InventoryInvalid as exc:
        fail_inventory(exc)
    try:
        topo = ibnetdiscover.parse(source.read_text(encoding="utf-8", errors="replace"))
    except OSError as exc:
        err.print(f"{source}: {exc.strerror}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    except ParseError as exc:
        err.print(f"{source}:{exc.line_no}: {exc.message}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    learned = run_learn(checked.index, topo)
    target = env / GENERATED
    if not dry_run:
        text = HEADER + yaml.safe_dump(learned.as_yaml_data(), sort_keys=False, default_flow_style=False)
        write_atomic(target, text)
    if fmt is Format.json:
        print_json(
            {
                "written": None if dry_run else str(target),
                "switches": len(learned.switches),
                "hcas": len(learned.hcas),
                "ports": len(learned.ports),
                "how": learned.how,
                "unbound": [{"guid": n.guid, "name": n.name} for n in learned.unbound],
                "not_seen": learned.not_seen,
            }
        )
        return
    by_how: dict[str, int] = {}
    for how in learned.how.values():
        by_how[how] = by_how.get(how, 0) + 1
    out.print(
        f"locked {len(learned.switches)} switch(es), {len(learned.hcas)} HCA(s), "
        f"{len(learned.ports)} port GUID(s) ({', '.join(f'{v} by {k}' for k, v in sorted(by_how.items()))})"
        + ("" if dry_run else f" -> {target}")
    )
    for node in learned.unbound:
        out.print(f"  could not bind {node.kind} {node.guid} {node.name!r}", markup=False)
    for name in learned.not_seen:
        out.print(f"  declared but not seen: {name}", markup=False)
