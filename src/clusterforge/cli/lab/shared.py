"""What every `clusterforge lab` command shares: ENV first (or the old hidden `--env`), the one-line result
in text or JSON, the running lab of an environment, and a lab error as exit 1."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import typer

from ...lab import LabError, LabState
from ...rehearsal import env as labenv
from ...util.errors import ExitCode
from ..console import Format, err, out, print_json


def _fail(exc: Exception) -> NoReturn:
    err.print(f"lab: {exc}", markup=False)
    raise typer.Exit(int(ExitCode.FAILURE))


DEFAULT_ENV = Path("inventories/lab")
_ENV_OPT = typer.Option(None, "--env", hidden=True, help="the environment (old form: ENV goes first now)")


def _env_first(args: list[str], env_opt: Path | None, want: int, usage: str,
               exact: bool = True) -> tuple[Path, list[str]]:
    """ENV is the first argument, as in every command; the older `--env ENV` (hidden) is still understood.
    With neither, the lab environment (inventories/lab) when the other arguments fill `want` exactly."""
    if env_opt is not None:
        env, rest = env_opt, args
    elif len(args) > want:
        env, rest = Path(args[0]), args[1:]
    else:
        env, rest = DEFAULT_ENV, args
    if len(rest) < want or (exact and len(rest) != want):
        err.print(f"usage: clusterforge lab {usage}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    return env, rest


_FMT = typer.Option(Format.text, "--format", help="text or json")


def _say(fmt: Format, text: str, **data: object) -> None:
    """The command's one-line result: the line, or with --format json an object with it and its fields."""
    if fmt is Format.json:
        print_json({"message": text, **data})
    else:
        out.print(text, markup=False)


def _running(env: Path) -> LabState:
    state = labenv.running(env)
    if state is None:
        _fail(LabError(f"no lab is up for {env}: run `clusterforge lab up {env}`"))
    return state


def _master_sm(env: Path, state: LabState) -> str | None:
    """The lab host of the highest-priority SM node `env`'s inventory names (the remedy for a lab SM that stopped
    sweeping restarts its OpenSM: lab/sm_remedy.py); None without SM nodes, or when the inventory does not load
    (the remedy is then only described)."""
    from ...inventory.load import load_inventory
    from ...lab.sm_remedy import master_sm_node
    from ...util.errors import InventoryInvalid

    try:
        inv, _ = load_inventory(env)
    except (InventoryInvalid, OSError, ValueError):
        return None
    sm_nodes = inv.opensm.sm_nodes if inv.opensm is not None else []
    return master_sm_node(state, [(sm.node, sm.priority) for sm in sm_nodes])
