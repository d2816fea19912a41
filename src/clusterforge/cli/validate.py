"""`clusterforge validate ENV`: compare what the hosts and the fabric show with the inventory."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ..check.checked import Checked
from ..collect.store import Observations, OutputTooLarge, load_dir, save_dir
from ..inventory.selection import SelectionError, node_names
from ..util.echo import one_line
from ..util.errors import ExitCode
from ..util.fsutil import write_atomic
from ..validate.declared import key_before_load
from ..validate.findings import Finding
from ..validate.report import exit_code, print_summary, to_json, to_junit
from ..validate.run import validate as run_validate
from .console import Format, err, out, print_json
from .loading import check_output_path, load_or_fail
from .progress import progress

if TYPE_CHECKING:
    from ..lab.state import LabState


def validate(
    env: Path = typer.Argument(..., help="environment directory, e.g. inventories/prod"),
    from_dir: Path | None = typer.Option(None, "--from", help="validate saved outputs from DIR"),
    save: Path | None = typer.Option(None, "--save", help="keep the collected raw outputs in DIR"),
    fmt: Format = typer.Option(Format.text, "--format", help="text or json"),
    junit: Path | None = typer.Option(None, "--junit", help="also write a JUnit XML report"),
    limit: str | None = typer.Option(None, "--limit", help="report only findings about these hosts "
                                     "(comma-separated names or ranges: gpu[0001-0512]; their own checks and "
                                     "their fabric ports): a day-2 wave"),
    fabric_only: bool = typer.Option(
        False, "--fabric-only", help="check the fabric alone: host outputs are neither expected nor checked"
    ),
    switch: str | None = typer.Option(None, "--switch", help="a switch's firmware wave (day-2): only this "
                                      "switch's firmware is checked against its pin (the others are bumped in "
                                      "their own waves), and its findings are kept under --limit"),
    no_lab: bool = typer.Option(False, "--no-lab", help="collect from the inventory's hosts even when a lab of "
                                "this environment is up (by default a running lab is what is validated)"),
) -> None:
    """Validate the built fabric and hosts against the inventory (exit 4 on findings, 5 unreachable).

    Missing data is a finding: no fabric output (FAB-NO-DATA), a declared host without its
    outputs (HOST-NO-DATA), outputs for an undeclared host (HOST-UNKNOWN).
    """
    for path, option in ((junit, "--junit"), (save, "--save")):
        if path is not None:
            check_output_path(path, option, directory=option == "--save")
    # the declared-fabric cache (validate/quick.py) is keyed by the files as they are before loading
    key = key_before_load(env) if from_dir is not None and fabric_only else None
    checked = load_or_fail(env)
    try:  # names, or hostlist ranges of them (gpu[0001-0512], as a day-2 wave writes them), each a node, checked
        # before collecting (a typo should not cost a whole collection first); an empty one is refused: reporting
        # on no host would pass a wave that checked nothing
        hosts = None if limit is None else set(node_names(checked.index, limit))
    except SelectionError as exc:
        err.print(str(exc), markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    if switch is not None and switch not in checked.index.switches:
        err.print(f"--switch: not a switch of {env}: {switch}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    lab: LabState | None = None
    if from_dir is not None:
        if not from_dir.is_dir():
            err.print(f"{from_dir}: not a directory of saved outputs", markup=False)
            raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
        try:
            obs = load_dir(from_dir)
        except (OSError, OutputTooLarge) as exc:
            where = one_line(str(getattr(exc, "filename", None) or from_dir))  # a capture's name: one line
            err.print(f"{where}: {getattr(exc, 'strerror', None) or exc}", markup=False)
            raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    else:
        obs, lab = _collect_live(env, checked, no_lab)
        if save is not None:
            save_dir(save, obs)
    report = run_validate(checked.index, obs, fabric_only=fabric_only, switch=switch)
    if lab is not None:
        _lab_partial(env, lab, checked, report.findings)
    if hosts is not None:
        report.findings = [f for f in report.findings if _in_wave(f, hosts, switch)]
    for i, f in enumerate(report.findings):
        if f.inventory:
            file, line, col = checked.source.locate(f.inventory)
            if file and line:
                report.findings[i] = _with_where(f, f"{file}:{line}:{col}")
    if junit is not None:
        write_atomic(junit, to_junit(report))
    if fmt is Format.json:
        print_json(to_json(report))
    else:
        print_summary(out, report)
    if key is not None:
        from ..validate.declared import refresh

        refresh(env, checked.index, key)
    raise typer.Exit(int(exit_code(report)))


def _in_wave(f: Finding, hosts: set[str], switch: str | None) -> bool:
    """Whether `--limit HOSTS` (and `--switch`) keeps a finding, by its ids: it is about one of the hosts (a
    host's own check, or a link or port with a host end among them), about the wave's switch (its firmware, its
    links), or about no device at all: the fabric's own data problems (FAB-NO-DATA, a plane not collected, an
    unparsable ibnetdiscover) concern every host's ports, so a wave is never "clean" on a fabric that was not
    checked."""
    if f.host is not None and f.host in hosts:
        return True
    if switch is not None and f.switch == switch:
        return True
    return f.host is None and f.switch is None and f.cable is None and f.port is None


def _with_where(f: Finding, where: str) -> Finding:
    return dataclasses.replace(f, where=where)


def _lab_partial(env: Path, state: LabState, checked: Checked, findings: list[Finding]) -> None:
    """A lab that runs a selection of the environment: the nodes without a container are not expected to
    answer (their HCAs are simulated and their ports checked with the whole fabric); say so once."""
    if len(state.hosts) >= len(checked.index.nodes):
        return
    absent = set(checked.index.nodes) - set(state.hosts)
    findings[:] = [f for f in findings if not (f.rule == "HOST-NO-DATA" and f.host in absent)]
    err.print(f"lab of {env}: {len(state.hosts)} of {len(checked.index.nodes)} nodes have a container: host "
              f"checks for those, the whole fabric for all ({len(absent)} nodes' hosts not checked)", markup=False)


def _collect_live(env: Path, checked: Checked, no_lab: bool = False) -> tuple[Observations, LabState | None]:
    """From the environment's lab when one is up for it (unless `no_lab`), else from the real hosts;
    with the lab's state (None when collected from the real hosts)."""
    from ..collect.live import ssh_config, targets
    from ..collect.ssh import collect
    from ..rehearsal import (
        env as labenv,  # the lab and SSH modules only when collecting live (`--from` needs none: 0.7 s)
    )

    state = None if no_lab else labenv.running(env)
    if state is not None:
        hosts, fabric = labenv.collect_targets(state, checked)
        cfg = labenv.collect_config(state)
    else:
        hosts, fabric = targets(checked.index)
        cfg = ssh_config(env, checked.index)
    # a bar on stderr while the hosts answer, on a terminal only (never in --format json's stdout)
    with progress(f"collect {env.name}", total=len(hosts) + (fabric is not None)) as advance:
        obs = collect(cfg, hosts, fabric, advance)
    if fabric is not None:  # phase two: the pinned switches' firmware, in-band, by the LIDs phase one found
        from ..collect.plan import Target, plane_ports
        from ..validate.switch_firmware import query_commands

        queries = query_commands(checked.index, obs, plane_ports(checked.index, fabric.host))
        if queries:
            more = collect(cfg, [], Target(fabric.host, fabric.address, queries))
            obs.fabric.update(more.fabric)
            for host, why in more.unreachable.items():
                obs.unreachable.setdefault(host, why)
    return obs, state
