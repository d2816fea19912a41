"""`clusterforge lab fault errors|hot|ecc` (monitoring faults on the lab's stand-ins), their heal and status."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

import typer

from ...lab import LabError
from ...lab import monitoring_faults as mf
from ...rehearsal import env as labenv
from ...util.errors import ExitCode
from ..console import Format, err, out, print_json
from ..loading import load_or_fail

KINDS = mf.KINDS
USAGE = ("usage: clusterforge lab fault [ENV] errors CABLE [--rate N] | hot HOST GPU [--temp C] | "
         "ecc HOST GPU [--per-day N]")


def _usage(msg: str) -> NoReturn:
    err.print(f"lab fault: {msg}", markup=False)
    err.print(USAGE, markup=False)
    raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))


def fault(env: Path, kind: str, args: list[str], *, rate: float | None, temp: float | None,
          per_day: float | None, fmt: Format) -> None:
    """Check the arguments against the inventory (exit 2 naming what is wrong), then apply in the running lab."""
    from ...rehearsal import faults as labfaults

    want = 1 if kind == "errors" else 2
    if len(args) != want:
        _usage(f"{kind} takes {'a cable id' if want == 1 else 'a host and a GPU index'}, got {len(args)} "
               "argument(s)")
    stray = {"errors": (("--temp", temp), ("--per-day", per_day)), "hot": (("--rate", rate), ("--per-day", per_day)),
             "ecc": (("--rate", rate), ("--temp", temp))}[kind]
    for name, value in stray:
        if value is not None:
            _usage(f"{name} does not apply to {kind}")
    checked = load_or_fail(env)
    try:
        if kind == "errors":
            f = labfaults.cable_errors(checked, args[0], rate if rate is not None else labfaults.DEFAULT_RATE_PER_H)
        elif kind == "hot":
            f = labfaults.gpu_hot(checked, args[0], args[1], temp if temp is not None else labfaults.DEFAULT_TEMP_C)
        else:
            f = labfaults.gpu_ecc(checked, args[0], args[1],
                                  per_day if per_day is not None else labfaults.DEFAULT_ECC_PER_DAY)
    except labfaults.FaultArgError as exc:
        _usage(str(exc))
    state = labenv.running(env)
    if state is None:
        err.print(f"lab: no lab is up for {env}: run `clusterforge lab up {env}`", markup=False)
        raise typer.Exit(int(ExitCode.FAILURE))
    try:
        mf.inject(state, f)
    except (LabError, OSError) as exc:
        err.print(f"lab: {exc}", markup=False)
        raise typer.Exit(int(ExitCode.FAILURE)) from None
    changed = [f"{v.host} {v.what}" for v in f.values]
    if fmt is Format.json:
        print_json({"message": f"fault {f.describe()}", "environment": str(env), "fault": kind, "target": f.target,
                    "params": f.params, "changed": changed, "not_simulated": list(f.notes)})
        return
    out.print(f"fault {f.describe()}: {', '.join(changed)}", markup=False)
    for note in f.notes:
        out.print(f"  {note}", markup=False)


def heal(state_dir: Path) -> int:
    return mf.heal(state_dir)


def status_faults(state_dir: Path) -> list[dict[str, Any]]:
    """The monitoring faults that hold, each with whether its driver still runs."""
    faults = mf.faults(state_dir)
    running = mf.driver_running(state_dir) if faults else False
    return [{**f, "driver_running": running} for f in faults]


def print_status(faults: list[dict[str, Any]]) -> None:
    for f in faults:
        params = ", ".join(f"{k} {v:g}" for k, v in f.get("params", {}).items())
        driver = "" if f["driver_running"] else " (driver NOT running: `lab heal`, then fault again)"
        out.print(f"  monitoring fault: {f['kind']} {f['target']} ({params}) on {', '.join(f['hosts'])}{driver}",
                  markup=False)


def drained(state_dir: Path, known: set[str]) -> list[str]:
    """The lab's drained hosts, after applying the requests the containers left (the drain hook's stand-in)."""
    from ...lab.drain_outbox import fold
    from ...lab.technician import drained as read_drained

    try:
        for req in fold(state_dir, known):
            if not req.get("applied"):
                err.print(f"lab: a drain request from a container was refused: {req.get('error')}", markup=False)
        hosts = read_drained(state_dir).get("drained")
    except (LabError, OSError, ValueError) as exc:
        err.print(f"lab: {exc}", markup=False)
        return []
    return sorted(str(h) for h in hosts) if isinstance(hosts, list) else []
