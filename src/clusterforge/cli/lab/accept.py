"""`clusterforge lab accept [ENV] --output DIR` and `lab fault pcie HOST GPU [--gen N]`: the acceptance run's
LAB-ONLY stand-in outputs (lab/accept_standins.py), from the lab's fabric as ibnetdiscover shows it now.

    clusterforge lab fault degrade C-00012          # a cable at 1X: a quarter of its rate
    clusterforge lab fault pcie gpu03 0 --gen 3     # gpu03's first GPU at PCIe Gen3
    clusterforge lab accept --output run/           # what the acceptance tools would print
    clusterforge accept inventories/lab --from run/ # judged as a real run's outputs are

With `--routes FILE` (the SM's tables, e.g. what `validate --save DIR` collected as DIR/fabric/dump_fts.txt) the
plan is the routed one and each link test is rated by the slowest link on its route, so a degraded uplink slows
the tests that cross it: `accept --from run/ --routes FILE` names it.

The PCIe faults are kept in `<state>/accept_faults.json` (atomically written); `lab heal` clears them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import NoReturn

import typer

from ...accept.locate import rates_along
from ...accept.plan import AcceptPlan, accept_plan
from ...accept.route_plan import ROUNDS
from ...lab import LabError, LabState, fault_injector
from ...lab.accept_guest import answers, arm, disarm
from ...lab.accept_standins import LABEL, AcceptFaults, cable_end, link_gbps, outputs
from ...rehearsal import env as labenv
from ...util.echo import one_line
from ...util.errors import ExitCode
from ...util.fsutil import fresh_directory, new_directory_problem, terminate_cleanly, write_atomic
from ..accept import routed_or_exit
from ..console import Format, err, out, print_json
from ..loading import load_or_fail

KINDS = ("pcie",)
FAULTS = "accept_faults.json"
USAGE = "usage: clusterforge lab fault [ENV] pcie HOST GPU [--gen N]"


def _usage(msg: str) -> NoReturn:
    err.print(f"lab fault: {msg}", markup=False)
    err.print(USAGE, markup=False)
    raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))


def _fail(msg: str) -> NoReturn:
    err.print(f"lab: {msg}", markup=False)
    raise typer.Exit(int(ExitCode.FAILURE))


def read_faults(state_dir: Path) -> AcceptFaults:
    path = state_dir / FAULTS
    if not path.exists():
        return AcceptFaults()
    data = json.loads(path.read_text())
    return AcceptFaults(pcie={str(n): {int(g): int(v) for g, v in gpus.items()}
                              for n, gpus in data.get("pcie", {}).items()})


def heal(state_dir: Path) -> int:
    """Clear the acceptance faults and disarm the stand-in tools; how many faults there were."""
    n = sum(len(g) for g in read_faults(state_dir).pcie.values())
    (state_dir / FAULTS).unlink(missing_ok=True)
    hosts = state_dir / "hosts"
    disarm({p.name: p for p in hosts.iterdir() if p.is_dir()} if hosts.is_dir() else {},
           state_dir / "guest" / "sbin")
    return n


def fault(env: Path, kind: str, args: list[str], *, gen: int | None, fmt: Format) -> None:
    """`pcie HOST GPU`: the GPU's PCIe link at generation `gen` (3) in the stand-in nvidia-smi -q."""
    if len(args) != 2:
        _usage(f"{kind} takes a host and a GPU index, got {len(args)} argument(s)")
    host, gpu_text = args
    checked = load_or_fail(env)
    gpus = {t.node: t.gpus for t in accept_plan(checked.index).nodes}.get(host, 0)
    if not gpus:
        _usage(f"{host!r} is not a GPU node of {env}")
    if not gpu_text.isdigit() or int(gpu_text) >= gpus:
        _usage(f"GPU {gpu_text!r}: an index 0..{gpus - 1} of {host}")
    value = 3 if gen is None else gen
    if not 1 <= value <= 6:
        _usage(f"--gen {value}: a PCIe generation 1..6")
    state = labenv.running(env)
    if state is None:
        _fail(f"no lab is up for {env}: run `clusterforge lab up {env}`")
    now = read_faults(state.state_dir)
    pcie = {n: dict(g) for n, g in now.pcie.items()}
    pcie.setdefault(host, {})[int(gpu_text)] = value
    write_atomic(state.state_dir / FAULTS, json.dumps({"pcie": {n: {str(g): v for g, v in sorted(gs.items())}
                                                               for n, gs in sorted(pcie.items())}}, indent=1))
    text = f"fault pcie on {host} GPU {gpu_text}: PCIe Gen{value} (lab accept's nvidia-smi -q)"
    if fmt is Format.json:
        print_json({"message": text, "environment": str(env), "fault": kind, "host": host, "gpu": int(gpu_text),
                    "gen": value})
    else:
        out.print(text, markup=False)


def _texts(env: Path, routes: Path | None = None, rounds: int = ROUNDS) -> tuple[
        LabState, AcceptPlan, dict[str, float | None], dict[str, str]]:
    """The running lab, the plan (routed by `routes`, as `accept --routes` routes it), each port's rate now and
    every output as the stand-ins print it now (with routes: each link test at the slowest link on its route)."""
    checked = load_or_fail(env)
    state = labenv.running(env)
    if state is None:
        _fail(f"no lab is up for {env}: run `clusterforge lab up {env}`")
    plan = accept_plan(checked.index)
    tables = None
    if routes is not None:
        plan, tables, _ = routed_or_exit(checked.index, plan, routes, rounds)
    try:
        disc = fault_injector(state).discover()
    except (LabError, OSError) as exc:
        _fail(str(exc))
    rates = {p.label: link_gbps(disc.rate(cable_end((p.node, p.hca, p.port)))) for p in plan.ports}
    along = None
    if tables is not None:
        cable_gbps = {c.id: link_gbps(disc.rate(cable_end(c.a.key))) for c in checked.index.inv.cables}
        along = rates_along(checked.index, tables, plan.links, cable_gbps)
    return state, plan, rates, outputs(plan, rates, read_faults(state.state_dir), along)


def arm_lab(env: Path, fmt: Format, routes: Path | None = None, rounds: int = ROUNDS) -> None:
    """The stand-in tools on the lab hosts answer the plan's commands over SSH as the lab is now."""
    state, plan, _rates, texts = _texts(env, routes, rounds)
    per_host = answers(plan, texts)
    host_dirs = {name: state.state_dir / "hosts" / name for name in state.hosts}
    n = arm(state.state_dir / "guest" / "sbin", host_dirs, per_host)
    text = (f"armed the LAB-ONLY acceptance stand-ins on {len(host_dirs)} lab host(s): {n} answers as the lab is "
            f"now (run them: clusterforge accept {env} --run DIR; `lab heal` disarms)")
    if fmt is Format.json:
        print_json({"message": text, "environment": str(env), "hosts": len(host_dirs), "answers": n,
                    "stand_in": True})
    else:
        out.print(text, markup=False)


def write_outputs(output: Path, texts: Mapping[str, str]) -> None:
    """`texts` (path under `output` -> text) and STAND-IN.txt written under `output`, a new or empty directory
    (fsutil.fresh_directory), each file atomically. A write that fails (OSError) or an interrupt (Ctrl-C,
    SIGTERM) leaves `output` as it was: none of the files, no temporary, the directory gone again if it was
    new."""
    with terminate_cleanly(), fresh_directory(output):
        for rel, text in sorted(texts.items()):
            write_atomic(output / rel, text)
        write_atomic(output / "STAND-IN.txt", f"{LABEL}\n(lab/accept_standins.py says how each figure is made)\n")


def run(env: Path, output: Path, fmt: Format, routes: Path | None = None, rounds: int = ROUNDS) -> None:
    """Write the acceptance plan's outputs, as the lab's stand-ins print them now, under `output`."""
    problem = new_directory_problem(output)
    if problem is not None:
        _fail(f"--output {one_line(str(output))}: {problem}")
    _state, _plan, rates, texts = _texts(env, routes, rounds)
    try:
        write_outputs(output, texts)
    except KeyboardInterrupt:
        err.print(f"lab: interrupted; nothing kept in {one_line(str(output))}", markup=False)
        raise typer.Exit(130) from None
    except OSError as exc:
        _fail(f"--output {one_line(str(output))}: cannot write there ({exc.strerror or exc}); nothing kept")
    fastest = max((r or 0 for r in rates.values()), default=0)
    slow = sorted(k for k, v in rates.items() if v is None or v < fastest)
    text = (f"wrote {len(texts)} LAB-ONLY stand-in outputs to {output} (judge them: clusterforge accept {env} "
            f"--from {output})")
    if fmt is Format.json:
        print_json({"message": text, "environment": str(env), "output": str(output), "files": len(texts),
                    "ports_below_the_fastest": slow, "stand_in": True})
    else:
        out.print(text, markup=False)
        for k in slow:
            out.print(f"  {k}: {rates[k] or 0:g} Gb/s now (ibnetdiscover)", markup=False)
