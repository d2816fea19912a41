"""`clusterforge firmware flash|activate ENV --limit HOSTS|--switch NAME ...`: the machine steps of a day-2
firmware bump (firmware/flash.py for hosts' cards, firmware/switch.py for an unmanaged switch through the fabric;
`diff` plans them between a drain and a validation; a deploy never flashes)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import NoReturn

import typer

from ..check.checked import Checked
from ..firmware.flash import DEFAULT_IMAGE_DIR, QUERY, FlashJob, HostReport, Runner, staged_path
from ..firmware.switch import SwitchJob
from ..inventory.selection import SelectionError, node_names
from ..util.errors import ExitCode
from .console import Format, err, out, print_json
from .loading import load_or_fail

app = typer.Typer(no_args_is_help=True, help="Flash and activate HCA/DPU firmware on drained hosts, or an unmanaged "
                  "switch's through the fabric: the machine steps of a day-2 firmware bump (`diff` plans them; a "
                  "deploy never flashes).")


_FMT = typer.Option(Format.text, "--format", help="text or json (one document on stdout: each host's outcome)")


class How(StrEnum):
    mlxfwreset = "mlxfwreset"
    reboot = "reboot"
    swreset = "swreset"


def _usage(message: str) -> NoReturn:
    err.print(f"firmware: {message}", markup=False)
    raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))


def make_runner(env: Path, checked: Checked) -> Runner:
    """SSH to the environment's lab when one is up for it (its containers at their lab addresses, the lab's
    keys), else to the inventory's hosts (their management addresses; the deploy's SSH user, port,
    known_hosts)."""
    from ..firmware.flash import ssh_runner
    from ..rehearsal import env as labenv

    addresses, cfg = labenv.ssh_reach(env, checked.index)
    return ssh_runner(cfg, addresses)


def _hosts(checked: Checked, limit: str | None, model: str | None) -> list[str]:
    if limit is None:
        _usage("--limit HOSTS is required (names or ranges: gpu[0001-0008])")
    index = checked.index
    try:  # an empty one selects no host: refused, never widened
        hosts = node_names(index, limit)
    except SelectionError as exc:
        _usage(str(exc))
    if model is not None:
        from ..day2.firmware import card_models

        without = [h for h in hosts if model not in card_models(index, h)]
        if without:
            _usage(f"--limit: {', '.join(without[:8])} {'has' if len(without) == 1 else 'have'} no {model} card")
    missing = [h for h in hosts if h not in index.addresses.mgmt]
    if missing:
        _usage(f"--limit: {', '.join(missing[:8])} {'has' if len(missing) == 1 else 'have'} no management address")
    return hosts


def _device_type(checked: Checked, model: str) -> str:
    info = checked.index.cat.hcas.get(model)
    if info is None or info.fw_device_type is None:
        _usage(f"--model {model}: not an HCA/DPU model whose firmware mlxfwmanager reports (catalog hcas.yaml)")
    return info.fw_device_type


def _dry(plans: list[tuple[str, str]], fmt: Format) -> None:
    """A dry run's lines (host, what would run), or its JSON document."""
    if fmt is Format.json:
        print_json({"dry_run": True, "hosts": [{"host": h, "would_run": what} for h, what in plans]})
        return
    for h, what in plans:
        out.print(f"{h}: would run {what}", markup=False)
    out.print(f"dry run: {len(plans)} host(s), nothing connected to", markup=False)


def _report(reports: list[HostReport], verb: str, fmt: Format = Format.text) -> None:
    failed = [r.host for r in reports if not r.ok]
    if fmt is Format.json:
        print_json({"dry_run": False, "hosts": [{"host": r.host, "ok": r.ok, "lines": r.lines} for r in reports],
                    "failed": failed})
        if failed:
            raise typer.Exit(int(ExitCode.FAILURE))
        return
    for r in reports:
        for line in r.lines:
            (out if r.ok else err).print(line, markup=False)
    out.print(f"{len(reports) - len(failed)} host(s) {verb}, {len(failed)} failed"
              + (f": {', '.join(failed[:16])}" if failed else ""), markup=False)
    if failed:
        raise typer.Exit(int(ExitCode.FAILURE))


@dataclass(frozen=True)
class _Switch:
    name: str
    node: str  # the fabric node the switch is reached from (the master SM node)
    via: dict[int, tuple[str, int]]  # rail planes: the node's HCA port in each plane


def _switch(checked: Checked, env: Path, switch: str, limit: str | None, model: str | None) -> _Switch:
    """The unmanaged switch a `--switch` step works on, and the fabric node it is reached from."""
    from ..collect.plan import plane_ports, sm_node

    index = checked.index
    if limit is not None:
        _usage("--switch and --limit: a step works on one switch or on hosts, not both")
    sw = index.switches.get(switch)
    if sw is None:
        _usage(f"--switch {switch}: not a switch of {env}")
    if model is not None and model != sw.model:
        _usage(f"--switch {switch}: a {sw.model}, not a {model}")
    info = index.cat.switches.get(sw.model)
    if info is None or info.fw_tool != "mlxfwmanager-inband":
        _usage(f"--switch {switch}: a {sw.model} is updated from its own switch OS (catalog fw_tool "
               f"{info.fw_tool if info else 'unknown'}), by a person: the plan's upgrade step names it")
    node = sm_node(index)
    if node is None or node not in index.addresses.mgmt:
        _usage(f"--switch {switch}: no subnet-manager node with a management address to reach the fabric from "
               "(opensm.sm_nodes)")
    return _Switch(switch, node, plane_ports(index, node))


@app.command("flash")
def flash(
    env: Path = typer.Argument(..., help="environment directory, e.g. inventories/prod"),
    limit: str | None = typer.Option(None, "--limit", help="the (drained) hosts: names or ranges, gpu[0001-0008]"),
    model: str = typer.Option(..., "--model", help="the pinned model: an HCA/DPU (firmware.hcas[].model, e.g. "
                                                  "ConnectX-7) or, with --switch, the switch's (firmware.switches[])"),
    version: str = typer.Option(..., "--version", help="the pin's version (refused when the pin says another)"),
    allow_downgrade: bool = typer.Option(False, "--allow-downgrade",
                                         help="flash an older version (the inventory must allow it too: "
                                              "firmware.allow_downgrade)"),
    reflash: bool = typer.Option(False, "--reflash", help="flash cards already at the version (another image)"),
    image_dir: str = typer.Option(DEFAULT_IMAGE_DIR, "--image-dir",
                                  help="where the image is staged on each host (the pin image's file name in it)"),
    switch: str | None = typer.Option(None, "--switch", help="an unmanaged switch (catalog fw_tool "
                                      "mlxfwmanager-inband), flashed through the fabric from the SM node"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print what would run; connect to nothing"),
    fmt: Format = _FMT,
) -> None:
    """Flash the pinned firmware onto each host's cards of MODEL (exit 1 when a host failed; the others go on),
    or onto an unmanaged switch (--switch) through the fabric.

    Per host: `mlxfwmanager --query`; a card whose PSID the pin does not list is refused (never cross-flashed),
    one at the version skipped, an older version refused without --allow-downgrade; then `mlxfwmanager -d
    <card> -u -i <image> -y` from the image staged on the host. A switch: from the SM node, its LID from
    `ibnetdiscover`, `flint -d lid-<LID> q` (the same refusals), then `flint -d lid-<LID> -i <image> -y burn` from
    the image staged on the SM node. Activate it after (`firmware activate`).
    """
    checked = load_or_fail(env)
    kind = "switches" if switch is not None else "hcas"
    fw = checked.inv.firmware
    pins = (fw.switches if switch is not None else fw.hcas) if fw is not None else []
    at = next((i for i, p in enumerate(pins) if p.model == model), None)
    if fw is None or at is None:
        _usage(f"--model {model}: not pinned in {env}'s firmware.{kind}")
    pin = pins[at]
    if version != pin.version:
        _usage(f"--version {version}: firmware.{kind}[{at}] ({model}) pins {pin.version}")
    if allow_downgrade and not fw.allow_downgrade:
        _usage(f"--allow-downgrade: {env}'s firmware.allow_downgrade is false")
    if pin.image is None:
        _usage(f"firmware.{kind}[{at}] ({model}) names no image: add `image:` (its file is staged on "
               f"{'the SM node' if switch is not None else 'each host'})")
    if switch is not None:
        target = _switch(checked, env, switch, limit, model)
        _flash_switch(env, checked, target, SwitchJob(switch, version, staged_path(str(pin.image), image_dir),
                                                      tuple(pin.psids), allow_downgrade, reflash), dry_run, fmt)
        return
    device_type = _device_type(checked, model)
    hosts = _hosts(checked, limit, model)
    job = FlashJob(model, device_type, version, staged_path(str(pin.image), image_dir), tuple(pin.psids),
                   allow_downgrade, reflash)
    if dry_run:
        import shlex

        force = " --force" if allow_downgrade or reflash else ""
        allowed = f" ({', '.join(pin.psids)})" if pin.psids else ""
        what = (f"{shlex.join(QUERY)}; then, for each {device_type} card "
                f"{'' if reflash else f'not at {version} '}whose PSID the pin allows{allowed}: "
                f"mlxfwmanager -d <card> -u -i {shlex.quote(job.image)} -y{force}")
        _dry([(h, what) for h in hosts], fmt)
        return
    from ..firmware.flash import each, flash_host

    run = make_runner(env, checked)
    _report(each(hosts, lambda h: flash_host(h, job, run), checked.inv.deploy.parallel), "flashed or at the version",
            fmt)


@app.command("activate")
def activate(
    env: Path = typer.Argument(..., help="environment directory, e.g. inventories/prod"),
    limit: str | None = typer.Option(None, "--limit", help="the (drained, flashed) hosts"),
    how: How = typer.Option(..., "--how", help="mlxfwreset (each card of --model) or reboot (the catalog's "
                                               "fw_activation); swreset for a --switch"),
    model: str | None = typer.Option(None, "--model", help="the model whose cards are reset (--how mlxfwreset)"),
    switch: str | None = typer.Option(None, "--switch", help="an unmanaged switch, reset through the fabric "
                                      "(--how swreset)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print what would run; connect to nothing"),
    fmt: Format = _FMT,
) -> None:
    """Make the flashed firmware run: `mlxfwreset -d <card> -y reset` for each card of MODEL with a reset pending,
    or a reboot (waited for up to deploy.reboot.timeout_s), or a switch's `flint -d lid-<LID> swreset`
    (--switch, --how swreset); a query then proves the flash runs (exit 1 when a host failed)."""
    checked = load_or_fail(env)
    if (switch is not None) != (how is How.swreset):
        _usage("--how swreset is a switch's (--switch NAME); a host's cards take mlxfwreset or reboot")
    if switch is not None:
        _activate_switch(env, checked, _switch(checked, env, switch, limit, model), dry_run, fmt)
        return
    device_type = ""
    if how is How.mlxfwreset:
        if model is None:
            _usage("--how mlxfwreset needs --model (whose cards are reset)")
        device_type = _device_type(checked, model)
        wants = checked.index.cat.hcas[model].fw_activation
        if wants != "mlxfwreset":
            _usage(f"--model {model}: its firmware is activated by {wants} (catalog fw_activation), not mlxfwreset")
    hosts = _hosts(checked, limit, model)
    timeout = checked.inv.deploy.reboot.timeout_s
    if dry_run:
        what = (f"mlxfwreset -d <card> -y reset for each {device_type} card with a reset pending, then "
                "mlxfwmanager --query" if how is How.mlxfwreset else
                f"systemctl reboot, wait up to {timeout} s for SSH, then mlxfwmanager --query")
        _dry([(h, what) for h in hosts], fmt)
        return
    from ..firmware.flash import each, reboot_host, reset_host

    run = make_runner(env, checked)
    if how is How.mlxfwreset:
        reports = each(hosts, lambda h: reset_host(h, device_type, run), checked.inv.deploy.parallel)
    else:
        reports = each(hosts, lambda h: reboot_host(h, run, timeout), checked.inv.deploy.parallel)
    _report(reports, "activated", fmt)


def _flash_switch(env: Path, checked: Checked, target: _Switch, job: SwitchJob, dry_run: bool, fmt: Format) -> None:
    if dry_run:
        _dry([(target.node, f"ibnetdiscover (the LID of {target.name}); flint -d lid-<LID> q; then, when its PSID "
                            f"the pin allows and it is not at {job.version}: flint -d lid-<LID> -i {job.image} -y "
                            "burn")], fmt)
        return
    from ..firmware.switch import flash_switch, locate

    run = make_runner(env, checked)
    device, why = locate(target.node, target.name, checked.index, target.via, run)
    report = HostReport(target.name).fail(why) if device is None else flash_switch(target.node, device, job, run)
    _report([report], "flashed or at the version", fmt)


def _activate_switch(env: Path, checked: Checked, target: _Switch, dry_run: bool, fmt: Format) -> None:
    timeout = checked.inv.deploy.reboot.timeout_s
    if dry_run:
        _dry([(target.node, f"ibnetdiscover (the LID of {target.name}); flint -d lid-<LID> swreset when its flash "
                            f"is not what runs; then flint -d lid-<LID> q until it runs it (up to {timeout} s)")],
             fmt)
        return
    from ..firmware.switch import locate, reset_switch

    run = make_runner(env, checked)
    index = checked.index
    device, why = locate(target.node, target.name, index, target.via, run)
    if device is None:
        _report([HostReport(target.name).fail(why)], "activated", fmt)
        return
    report = reset_switch(target.node, device, target.name, run,
                          lambda: locate(target.node, target.name, index, target.via, run)[0], timeout)
    _report([report], "activated", fmt)
