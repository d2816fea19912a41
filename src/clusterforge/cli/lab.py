"""`clusterforge lab up|down|status|fault|heal ENV`: the local lab of an environment."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import NoReturn

import typer

from .. import labenv
from ..api import load_checked
from ..collect.plan import sm_node
from ..errors import ExitCode, InventoryInvalid
from ..lab import LabError, LabState, down, fault_injector, status, up
from .common import err, fail_inventory, out

app = typer.Typer(help="The local lab: containers with sshd on a simulated InfiniBand fabric.",
                  no_args_is_help=True)


def _fail(exc: Exception) -> NoReturn:
    err.print(f"lab: {exc}", markup=False)
    raise typer.Exit(int(ExitCode.FAILURE))


def _running(env: Path) -> LabState:
    state = labenv.running(env)
    if state is None:
        _fail(LabError(f"no lab is up for {env}: run `clusterforge lab up {env}`"))
    return state


@app.command("up")
def lab_up(
    env: Path = typer.Argument(Path("inventories/lab"), help="environment directory"),
    mode: str = typer.Option("auto", help="auto | podman | netns"),
    start_sm: bool = typer.Option(True, "--start-sm/--no-start-sm",
                                  help="push the rendered OpenSM files to the SM node and start it"),
) -> None:
    """Build (cached) and start the lab; idempotent."""
    try:
        checked = load_checked(env)
    except InventoryInvalid as exc:
        fail_inventory(exc)
    t0 = time.monotonic()
    try:
        spec, p = labenv.prepare(checked, env)
        state = up(spec, mode=mode)
        sm = sm_node(checked.index)
        if start_sm and sm is not None and sm in state.hosts:
            labenv.start_subnet_manager(state, p, sm)
        standins = labenv.install_gpu_standins(state, checked)
    except (LabError, OSError) as exc:
        _fail(exc)
    out.print(f"lab {state.lab} up in {time.monotonic() - t0:.1f} s ({state.mode} mode), "
              f"network {state.network_cidr}, simulator at {state.ibsim_address}")
    for name, rec in sorted(state.hosts.items()):
        hcas = ", ".join(d for d, _ in rec.hcas) or "no HCA"
        out.print(f"  {name:<12} {rec.address:<15} {hcas}", markup=False)
    if start_sm and sm is not None:
        out.print(f"  OpenSM on {sm} with the rendered /etc/opensm files")
    out.print(f"  lab-only nvidia-smi stand-in on {standins} GPU host(s) (no GPUs here: see docs/lab.md)")


@app.command("down")
def lab_down(env: Path = typer.Argument(Path("inventories/lab"))) -> None:
    """Stop exactly what the lab started; idempotent."""
    try:
        down(labenv.paths(env).state_dir)
    except (LabError, OSError) as exc:
        _fail(exc)
    out.print("lab down")


@app.command("status")
def lab_status(env: Path = typer.Argument(Path("inventories/lab")),
               as_json: bool = typer.Option(False, "--json")) -> None:
    """What runs where, and whether it is healthy (exit 1 when not)."""
    try:
        st = status(labenv.paths(env).state_dir)
    except LabError as exc:  # no lab recorded for this environment
        err.print(f"lab status: {exc}", markup=False)
        raise typer.Exit(int(ExitCode.FAILURE)) from None
    if as_json:
        out.print_json(json.dumps({"healthy": st.healthy, "mode": st.mode,
                                   "hosts": {h.name: {"state": h.state, "ssh": h.ssh} for h in st.hosts}}))
    else:
        out.print(f"healthy: {st.healthy} ({st.mode} mode)")
        for h in st.hosts:
            out.print(f"  {h.name:<12} {h.state or 'missing':<10} ssh {'ok' if h.ssh else 'FAILED'}", markup=False)
    if not st.healthy:
        raise typer.Exit(int(ExitCode.FAILURE))


@app.command("fault")
def lab_fault(
    kind: str = typer.Argument(..., help="remove | swap | degrade | down"),
    cables: list[str] = typer.Argument(..., help="inventory cable id(s); swap takes two"),
    env: Path = typer.Option(Path("inventories/lab"), "--env"),
    width: str = typer.Option("1X", help="degrade: link width"),
) -> None:
    """Inject a fault on inventory cables (validate then reports it)."""
    try:
        checked = load_checked(env)
    except InventoryInvalid as exc:
        fail_inventory(exc)
    state = _running(env)
    try:
        inj = fault_injector(state)
        ends = [labenv.cable_ports(checked, c) for c in cables]
        if kind == "swap":
            if len(ends) != 2:
                raise LabError("swap takes two cable ids")
            # exchange the switch-side plugs: the far ends (b) of the two cables
            inj.swap(ends[0][1], ends[1][1])
        elif kind in ("remove", "degrade", "down") and len(ends) == 1:
            b = ends[0][1]  # the switch side
            if kind == "remove":
                inj.remove(b)
            elif kind == "degrade":
                inj.degrade(b, width=width)
            else:
                inj.down(b)
        else:
            raise LabError(f"unknown fault {kind!r} or wrong number of cables")
        inj.wait_converged()
    except (LabError, OSError) as exc:
        _fail(exc)
    out.print(f"fault {kind} on {', '.join(cables)}")


@app.command("heal")
def lab_heal(env: Path = typer.Option(Path("inventories/lab"), "--env")) -> None:
    """Undo every injected fault."""
    state = _running(env)
    try:
        inj = fault_injector(state)
        n = inj.heal()
        inj.wait_converged()
    except (LabError, OSError) as exc:
        _fail(exc)
    out.print(f"healed {n} fault(s)")
