"""`clusterforge ansible-inventory ENV`: Ansible's JSON inventory from the model (dynamic inventory)."""

from __future__ import annotations

from pathlib import Path

import typer

from ..inventory.selection import SelectionError, limit_tokens
from ..util.errors import ExitCode
from .console import err, print_json
from .loading import load_or_fail


def ansible_inventory(
    env: Path = typer.Argument(..., help="environment directory, e.g. inventories/prod"),
    list_: bool = typer.Option(True, "--list", help="print the whole inventory (Ansible's script protocol)"),
    host: str | None = typer.Option(None, "--host", help="print one host's variables"),
    limit: list[str] = typer.Option([], "--limit", help="node, rack, role or suNN, or a range of them, as "
                                    "deploy's --limit"),
) -> None:
    """Print hosts, groups by role and rack, and hostvars with every file rendered (strings marked unsafe)."""
    from ..deploy.ansible import inventory
    from ..deploy.api import DeployError, DeployRequest, plans_for, ssh_from_inventory

    checked = load_or_fail(env)
    try:  # an empty --limit selects no host (refused, as deploy refuses it); a bad one says why, once
        req = DeployRequest(limit=limit_tokens(limit) if limit else ())
        plans = plans_for(env, req, None, checked.index)
    except (SelectionError, DeployError) as exc:
        err.print(f"ansible-inventory: {exc}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    data = inventory(list(plans.values()), ssh_from_inventory(env, checked.index))
    if host is not None:
        print_json(data["_meta"]["hostvars"].get(host, {}))
        return
    print_json(data)
