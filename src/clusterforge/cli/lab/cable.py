"""`clusterforge lab cable unplug|plug|move|replace`: a technician's physical work in the running lab's simulated
fabric (lab only; day-2 `apply --lab-technician` does the same per step, day2/lab_technician.py). Each waits
until the fabric shows the work, and a plugged HCA port until the subnet manager has made it Active."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import typer

from ...lab import LabError, LabState, PortRef, fault_injector
from ...lab.lab import technician
from ...lab.sm_remedy import has_subnet_manager, wait_active_or_restart_master
from ...lab.technician import Technician
from ...util.errors import ExitCode
from ..console import Format, err
from .shared import _ENV_OPT, _FMT, _env_first, _fail, _master_sm, _running, _say

cable_app = typer.Typer(help="Lab only: a technician's physical work in the simulated fabric (it stays done: "
                             "`lab heal` undoes faults, not this).", no_args_is_help=True)


_T = TypeVar("_T")


def _technician_does(env: Path, work: Callable[[Technician], _T]) -> tuple[Technician, _T]:
    """The running lab's technician does WORK; then wait until the fabric shows it (a lab error exits)."""
    state = _running(env)
    try:
        tech = technician(state)
        done = work(tech)
        _settle(state)
    except (LabError, OSError) as exc:
        _fail(exc)
    _wait_plugged_active(env, state, tech)
    return tech, done


def _wait_plugged_active(env: Path, state: LabState, tech: Technician) -> None:
    """A plugged port shows in ibnetdiscover before the subnet manager has swept it (ibsim links it
    Initializing and sends the switch's trap 128). When the lab has a subnet manager (its own OpenSM, or SM
    nodes), wait until each HCA the technician plugged reads Active in its own ibstat; past a minute, restart
    the master SM node's OpenSM (a lab SM can stop sweeping: lab/sm_remedy.py) and wait again; still not, say
    so (the work is done: the port is as the fabric left it, and validate will say what it sees)."""
    plugged = {ep.node for ep in tech.plugged}
    if not (has_subnet_manager(state) and plugged):
        return
    try:
        wait_active_or_restart_master(state, plugged, _master_sm(env, state),
                                      lambda text: err.print(f"lab cable: {text}", markup=False))
    except LabError as exc:
        err.print(f"lab cable: done, but a plugged port is not Active yet: {exc}", markup=False)


def _port(end: str) -> PortRef:
    from ...day2.lab_technician import lab_port

    try:
        return lab_port(end)
    except ValueError:
        err.print(f"lab cable: {end!r} is not a port: write node/HCA/PORT or switch/PORT", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None


def _settle(state: LabState) -> None:
    """Wait until ibnetdiscover shows the fabric as now cabled (the technician's work, minus faults)."""
    fault_injector(state).wait_converged()


@cable_app.command("unplug")
def cable_unplug(
    args: list[str] = typer.Argument(..., metavar="[ENV] END",
                                     help="environment; the port the cable is in: node/HCA/PORT or switch/PORT"),
    env_opt: Path | None = _ENV_OPT,
    fmt: Format = _FMT,
) -> None:
    """Pull the cable out of END (and of whatever port its other end is in)."""
    env, (end,) = _env_first(args, env_opt, 1, "cable unplug [ENV] END")
    tech, peer = _technician_does(env, lambda t: t.unplug(_port(end)))
    _say(fmt, f"unplugged {end} (it went to {tech.net.nodes[peer.node].desc} port {peer.port})", unplugged=end)


@cable_app.command("plug")
def cable_plug(
    args: list[str] = typer.Argument(..., metavar="[ENV] END PEER",
                                     help="environment; two free ports: node/HCA/PORT or switch/PORT"),
    env_opt: Path | None = _ENV_OPT,
    fmt: Format = _FMT,
) -> None:
    """Plug a cable between two free ports."""
    env, (end, peer) = _env_first(args, env_opt, 2, "cable plug [ENV] END PEER")
    _technician_does(env, lambda t: t.plug(_port(end), _port(peer)))
    _say(fmt, f"plugged {end} - {peer}", plugged=[end, peer])


@cable_app.command("move")
def cable_move(
    args: list[str] = typer.Argument(..., metavar="[ENV] END TO",
                                     help="environment; the port whose cable moves (stays plugged here): "
                                          "node/HCA/PORT; the free port its other end goes to: switch/PORT"),
    env_opt: Path | None = _ENV_OPT,
    fmt: Format = _FMT,
) -> None:
    """Move the far end of END's cable to another port (a node re-cabled to another leaf port)."""
    env, (end, to) = _env_first(args, env_opt, 2, "cable move [ENV] END TO")
    tech, old = _technician_does(env, lambda t: t.move(_port(end), _port(to)))
    _say(fmt, f"moved {end}: {tech.net.nodes[old.node].desc} port {old.port} -> {to}", moved=end, to=to)


@cable_app.command("replace")
def cable_replace(
    args: list[str] = typer.Argument(..., metavar="[ENV] SWITCH", help="environment; the switch replaced by a new box"),
    guid: str | None = typer.Option(None, "--guid", help="the new box's node GUID (default: a fresh one)"),
    env_opt: Path | None = _ENV_OPT,
    fmt: Format = _FMT,
) -> None:
    """Replace a switch with a new one (another GUID), every cable back in the same port."""
    from ...day2.lab_technician import new_switch_guid

    env, (switch,) = _env_first(args, env_opt, 1, "cable replace [ENV] SWITCH")
    def replace(t: Technician) -> tuple[str, int]:
        new = guid or new_switch_guid(switch, str(len(t.journal())))
        return new, t.replace(switch, new)

    _, (new, n) = _technician_does(env, replace)
    _say(fmt, f"replaced {switch}: new GUID {new}, {n} cable(s) back in their ports", switch=switch, guid=new,
         cables=n)
