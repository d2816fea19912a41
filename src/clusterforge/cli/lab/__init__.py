"""`clusterforge lab up|down|status|fault|heal|accept|cable|drain|resume`: the local lab of an environment."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ...inventory.selection import SelectionError, limit_tokens
from ...lab import LabError, down, fault_injector, status
from ...lab.sm_remedy import has_subnet_manager, wait_active_or_restart_master
from ...lab.technician import SINFO_FORMAT, set_drained, sinfo_reasons
from ...lab.technician import drained as drained_state
from ...rehearsal import env as labenv
from ...rehearsal import services as labservices
from ...util.errors import ExitCode
from ..console import Format, err, out, print_json, print_table
from ..loading import load_or_fail
from ..progress import ticked
from .cable import cable_app
from .shared import _ENV_OPT, _FMT, DEFAULT_ENV, _env_first, _fail, _master_sm, _running, _say

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

app = typer.Typer(help="The local lab: containers with sshd on a simulated InfiniBand fabric.",
                  no_args_is_help=True)


def _table(*columns: str) -> Table:
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold", show_edge=False)
    for c in columns:
        table.add_column(c)
    return table


def _cells(*values: str) -> list[Text]:
    from rich.text import Text

    return [Text(v) for v in values]  # names and tool output are data, never markup


@app.command("up")
def lab_up(
    env: Path = typer.Argument(Path("inventories/lab"), help="environment directory"),
    limit: list[str] = typer.Option([], "--limit", help="nodes to start, as deploy's --limit: node, rack, role or "
                                    "scalable unit (suNN), repeat or comma-separate; `all` for every node. Default: "
                                    "every node of a small environment, else one rack of GPU nodes, the SM nodes "
                                    "and one Lustre server"),
    cidr: str | None = typer.Option(None, "--cidr", help="lab network (in 198.18.0.0/15); default: the environment's "
                                    "own when it is a lab range, else 198.18.64.0 with its management prefix"),
    mode: str = typer.Option("auto", help="auto | podman | netns"),
    start_sm: bool = typer.Option(True, "--start-sm/--no-start-sm",
                                  help="push the rendered OpenSM files to the SM node(s) and start OpenSM"),
    replace: bool = typer.Option(False, "--replace", help="bring down a lab of this environment that was started "
                                 "with another selection, network or kind first (default: refuse)"),
    systemd: bool = typer.Option(False, "--systemd/--no-systemd",
                                 help="systemd as PID 1 in every container (podman --systemd=always): the deploy "
                                      "enables and starts its units (OpenSM, persistenced, Lustre mounts)"),
    slurm: bool = typer.Option(False, "--slurm", help="real Slurm (podman mode): slurmctld on the SM node, slurmd "
                               "on each compute node, munge; the drain hooks reach it (docs/health.md)"),
    fmt: Format = _FMT,
) -> None:
    """Build (cached) and start the lab of an environment; idempotent. Inventory addresses are mapped onto
    the lab network and never contacted; the whole fabric is simulated, the unselected nodes' HCAs too."""
    checked = load_or_fail(env)
    try:  # an empty --limit selects no node: refused before anything starts (never "every node")
        tokens = limit_tokens(limit) if limit else ()
    except SelectionError as exc:
        err.print(f"lab: {exc}", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE)) from None
    try:
        with ticked(f"lab up {env.name}") as ticks:  # a bar on a terminal only (image, hosts, fabric, OpenSM)
            res = labenv.bring_up(checked, env, limit=tokens, cidr=cidr, mode=mode, start_sm=start_sm,
                                  systemd=systemd, replace=replace, ticks=ticks, slurm=slurm)
    except (LabError, OSError, ValueError) as exc:
        _fail(exc)
    state = res.state
    mapping = labenv.read_mapping(env) or {}
    fabric = mapping.get("fabric") or {}
    if fmt is Format.json:
        hosts = mapping.get("hosts") or {}
        print_json({"lab": state.lab, "seconds": round(res.seconds, 1), "mode": state.mode,
                    "network": state.network_cidr, "simulator": state.ibsim_address,
                    "hosts": {name: {"address": rec.address, "inventory_address": (hosts.get(name) or {})
                                     .get("inventory_address"), "hcas": [d for d, _ in rec.hcas]}
                              for name, rec in sorted(state.hosts.items())},
                    "without_container": mapping.get("without_container", []), "fabric": fabric,
                    "opensm": list(res.sm_started), "nvidia_smi_standins": res.standins})
        return
    out.print(f"lab {state.lab} up in {res.seconds:.1f} s ({state.mode} mode), "
              f"network {state.network_cidr}, simulator at {state.ibsim_address}", markup=False)
    inv = {n: h.get("inventory_address") for n, h in (mapping.get("hosts") or {}).items()}
    hosts = _table("host", "lab address", "inventory address", "HCAs")
    for name, rec in sorted(state.hosts.items()):
        hosts.add_row(*_cells(name, rec.address, inv.get(name) or "-", ", ".join(d for d, _ in rec.hcas) or "no HCA"))
    print_table(hosts)
    n_out = len(mapping.get("without_container") or [])
    if isinstance(fabric, dict) and fabric:
        out.print(f"  fabric: {fabric.get('switches')} switches, {fabric.get('hca_ports')} HCA ports simulated; "
                  f"{n_out} node(s) without a container (their HCAs simulated)", markup=False)
    if res.sm_started:
        out.print(f"  OpenSM on {', '.join(res.sm_started)} (master first) with the rendered /etc/opensm files",
                  markup=False)
    elif state.opensm is not None:
        out.print(f"  OpenSM beside the simulator as {state.opensm.sim_host} (no SM node selected)", markup=False)
    out.print(f"  lab-only nvidia-smi stand-in on {res.standins} GPU host(s) (no GPUs here: see docs/lab.md)")


@app.command("down")
def lab_down(env: Path = typer.Argument(Path("inventories/lab")), fmt: Format = _FMT) -> None:
    """Stop exactly what the lab started; idempotent."""
    from ..floor import stop_background
    from . import monitoring as lab_monitoring

    try:
        stop_background(labenv.paths(env).state_dir)  # the lab's floor page, if `floor --background` serves it
        lab_monitoring.heal(labenv.paths(env).state_dir)  # the monitoring faults' driver first
        down(labenv.paths(env).state_dir)
        labenv.paths(env).mapping.unlink(missing_ok=True)
    except (LabError, OSError) as exc:
        _fail(exc)
    _say(fmt, "lab down", environment=str(env))


@app.command("status")
def lab_status(env: Path = typer.Argument(Path("inventories/lab")),
               as_json: bool = typer.Option(False, "--json", hidden=True, help="same as --format json"),
               fmt: Format = typer.Option(Format.text, "--format", help="text or json")) -> None:
    """What runs where (inventory address -> lab address), and whether it is healthy (exit 1 when not)."""
    try:
        st = status(labenv.paths(env).state_dir)
    except LabError as exc:  # no lab recorded for this environment
        err.print(f"lab status: {exc}", markup=False)
        raise typer.Exit(int(ExitCode.FAILURE)) from None
    from . import monitoring as lab_monitoring

    mapping = labenv.read_mapping(env) or {}
    inv = {n: h.get("inventory_address") for n, h in (mapping.get("hosts") or {}).items()}
    lab_addr = {n: h.get("lab_address") for n, h in (mapping.get("hosts") or {}).items()}
    try:
        monitoring_faults = lab_monitoring.status_faults(labenv.paths(env).state_dir)
    except LabError as exc:
        err.print(f"lab status: {exc}", markup=False)
        monitoring_faults = []
    drained = lab_monitoring.drained(labenv.paths(env).state_dir, {h.name for h in st.hosts})
    if as_json or fmt is Format.json:
        out.print_json(json.dumps({
            "healthy": st.healthy, "mode": st.mode, "lab_network": mapping.get("lab_network"),
            "inventory_network": mapping.get("inventory_network"),
            "hosts": {h.name: {"state": h.state, "ssh": h.ssh, "lab_address": lab_addr.get(h.name),
                               "inventory_address": inv.get(h.name)} for h in st.hosts},
            "without_container": mapping.get("without_container", []),
            "fabric": mapping.get("fabric"), "opensm": mapping.get("opensm"), "faults": st.faults,
            "monitoring_faults": monitoring_faults, "drained": drained}))
    else:
        out.print(f"healthy: {st.healthy} ({st.mode} mode), lab network {mapping.get('lab_network', '?')} "
                  f"(inventory {mapping.get('inventory_network', '?')}: never contacted)", markup=False)
        from rich.table import Table

        table = Table(box=None, pad_edge=False, header_style="bold")
        for column in ("host", "container", "ssh", "lab address", "inventory address"):
            table.add_column(column)
        for h in st.hosts:
            table.add_row(h.name, h.state or "missing", "ok" if h.ssh else "FAILED", lab_addr.get(h.name) or "?",
                          inv.get(h.name) or "?")
        out.print(table, markup=False)
        n_out = len(mapping.get("without_container") or [])
        if n_out:
            out.print(f"  {n_out} node(s) without a container (HCAs simulated)", markup=False)
        lab_monitoring.print_status(monitoring_faults)
        if drained:
            out.print(f"  drained (the lab's stand-in for a scheduler): {', '.join(drained)}", markup=False)
    if not st.healthy:
        raise typer.Exit(int(ExitCode.FAILURE))


@app.command("services")
def lab_services(env: Path = typer.Argument(Path("inventories/lab")),
                 fmt: Format = typer.Option(Format.text, "--format", help="text or json")) -> None:
    """Lab with systemd (`lab up --systemd`): every unit the deploy manages on each lab host, enabled and
    active, and the subnet managers' states as `sminfo` reports them (one MASTER). Exit 1 when not."""
    checked = load_or_fail(env)
    state = _running(env)
    try:
        units = labservices.unit_states(state, checked)
        sms = labservices.sm_states(state, checked)
    except (LabError, OSError) as exc:
        _fail(exc)
    if units is None:
        _fail(LabError("this lab runs no systemd (`lab up --systemd`): the deploy starts no unit in it"))
    masters = [sm for sm, text in sms.items() if "SMINFO_MASTER" in text]
    bad = [u for u in units if not u.ok]
    # one MASTER per subnet: with rail planes each SM node is reported per plane ("sm01 plane1")
    subnets = {sm.partition(" ")[2] for sm in sms}
    ok = not bad and all(sum(m.partition(" ")[2] == s for m in masters) == 1 for s in subnets)
    if fmt is Format.json:
        out.print_json(json.dumps({"ok": ok, "units": [{"host": u.host, "unit": u.unit, "enabled": u.enabled,
                                                        "active": u.active} for u in units],
                                   "subnet_managers": sms}))
    else:
        table = _table("host", "unit", "enabled", "active")
        for u in units:
            table.add_row(*_cells(u.host, u.unit, u.enabled or "-", u.active or "-"))
        print_table(table)
        if sms:
            managers = _table("subnet manager", "OpenSM")
            for sm, text in sms.items():
                managers.add_row(*_cells(sm, text))
            print_table(managers)
        out.print(f"{len(units) - len(bad)} of {len(units)} unit(s) enabled and active"
                  + (f"; {len(masters)} master SM(s)" if sms else ""), markup=False)
    if not ok:
        raise typer.Exit(int(ExitCode.FAILURE))


@app.command("fault")
def lab_fault(
    args: list[str] = typer.Argument(..., metavar="[ENV] KIND CABLE...",
                                     help="environment (default inventories/lab); remove | swap | degrade | down; "
                                          "inventory cable id(s), swap takes two. Monitoring (lab stand-ins): "
                                          "errors CABLE | hot HOST GPU | ecc HOST GPU. Acceptance (lab stand-ins): "
                                          "pcie HOST GPU"),
    env_opt: Path | None = _ENV_OPT,
    fmt: Format = _FMT,
    width: str = typer.Option("1X", help="degrade: link width"),
    rate: float | None = typer.Option(None, "--rate", help="errors: symbol and receive errors an hour (600)"),
    temp: float | None = typer.Option(None, "--temp", help="hot: HBM temperature, °C (91)"),
    per_day: float | None = typer.Option(None, "--per-day", help="ecc: corrected ECC errors a day (5000)"),
    gen: int | None = typer.Option(None, "--gen", help="pcie: the GPU's PCIe generation under load (3)"),
) -> None:
    """Inject a fault on inventory cables (validate then reports it), or on the monitoring stand-ins
    (errors rising on a cable's node ends, a GPU's HBM hot, its ECC count growing: the alerts then fire)."""
    from . import accept as lab_accept
    from . import monitoring as lab_monitoring

    if env_opt is None and len(args) >= 2 and args[0] in ("remove", "swap", "degrade", "down",
                                                            *lab_monitoring.KINDS, *lab_accept.KINDS) \
            and not Path(args[0]).is_dir():
        env, rest = DEFAULT_ENV, args
    else:
        env, rest = _env_first(args, env_opt, 2, "fault [ENV] KIND CABLE...", exact=False)
    kind, cables = rest[0], rest[1:]
    if kind in lab_accept.KINDS:
        lab_accept.fault(env, kind, cables, gen=gen, fmt=fmt)
        return
    if gen is not None:
        err.print("lab fault: --gen applies to pcie only", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    if kind in lab_monitoring.KINDS:
        lab_monitoring.fault(env, kind, cables, rate=rate, temp=temp, per_day=per_day, fmt=fmt)
        return
    checked = load_or_fail(env)
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
    _say(fmt, f"fault {kind} on {', '.join(cables)}", environment=str(env), fault=kind, cables=cables)


@app.command("heal")
def lab_heal(env_arg: Path | None = typer.Argument(None, metavar="[ENV]", help="environment (default inventories/lab)"),
             env_opt: Path | None = _ENV_OPT,
             fmt: Format = _FMT) -> None:
    """Undo every injected fault."""
    from . import accept as lab_accept
    from . import monitoring as lab_monitoring

    env = env_opt or env_arg or DEFAULT_ENV
    state = _running(env)
    try:
        inj = fault_injector(state)
        n = inj.heal()
        inj.wait_converged()
        # healed ports Active (the SM swept them) before anyone validates: every healed link's ends by PortInfo
        # with the lab's own OpenSM; with SM nodes (rail planes: one subnet each), each healed HCA by its own
        # ibstat, the master SM node's OpenSM restarted when one is not in time (lab/sm_remedy.py)
        if inj.healed and (state.opensm_host or state.opensm is not None):
            inj.wait_active(inj.healed)
        elif inj.healed and has_subnet_manager(state):
            try:
                wait_active_or_restart_master(state, {ep.node for ep in inj.healed}, _master_sm(env, state),
                                              lambda text: err.print(f"lab heal: {text}", markup=False))
            except LabError as exc:  # healed all the same: validate says what it sees
                err.print(f"lab heal: done, but a healed port is not Active yet: {exc}", markup=False)
        n += lab_monitoring.heal(state.state_dir)  # errors|hot|ecc: the stand-ins' values back as they were
        n += lab_accept.heal(state.state_dir)  # pcie
    except (LabError, OSError) as exc:
        _fail(exc)
    _say(fmt, f"healed {n} fault(s)", healed=n)


@app.command("accept")
def lab_accept_run(
    env: Path = typer.Argument(DEFAULT_ENV, help="environment (default inventories/lab)"),
    output: Path | None = typer.Option(None, "--output", "-o", help="a new (or empty) directory for the outputs"),
    arm: bool = typer.Option(False, "--arm", help="put the stand-in tools' answers on the lab hosts instead, for "
                             "`clusterforge accept ENV --run DIR` over SSH (`lab heal` disarms)"),
    routes: Path | None = typer.Option(None, "--routes", help="the SM's forwarding tables (as `accept --routes` "
                                       "takes them): the routed plan's tests, each rated along its route"),
    # accept.route_plan's ROUNDS and MAX_ROUNDS, spelled here (the lab CLI imports no planner at start; a test
    # holds them equal)
    rounds: int = typer.Option(5, "--rounds", min=2, max=256, help="with --routes: the plan's rounds at most, as "
                               "given to `accept --plan --rounds`"),
    fmt: Format = _FMT,
) -> None:
    """LAB-ONLY: write what `accept ENV --plan`'s tools would print here (real captures, figures from the lab's
    fabric now and its `lab fault pcie` faults), for `clusterforge accept ENV --from DIR` to judge; or, with
    --arm, make the lab hosts' stand-in tools print it when `accept ENV --run DIR` runs them over SSH."""
    from . import accept as lab_accept

    if arm == (output is not None):
        err.print("lab accept: give exactly one of --output DIR or --arm", markup=False)
        raise typer.Exit(int(ExitCode.USAGE_OR_PARSE))
    if arm:
        lab_accept.arm_lab(env, fmt, routes, rounds)
    else:
        assert output is not None
        lab_accept.run(env, output, fmt, routes, rounds)


@app.command("drain")
def lab_drain(args: list[str] = typer.Argument(..., metavar="[ENV] HOST"), env_opt: Path | None = _ENV_OPT,
              reason: str | None = typer.Option(None, "--reason", help="why (the drain hook's {reason})"),
              fmt: Format = _FMT) -> None:
    """Lab only: mark a host drained (the lab's stand-in for a scheduler; the lab inventory's drain hook)."""
    env, (host,) = _env_first(args, env_opt, 1, "drain [ENV] HOST")
    _drain(env, host, True, fmt, reason)


@app.command("resume")
def lab_resume(args: list[str] = typer.Argument(..., metavar="[ENV] HOST"), env_opt: Path | None = _ENV_OPT,
             fmt: Format = _FMT) -> None:
    """Lab only: return a drained host to service (the lab inventory's resume hook)."""
    env, (host,) = _env_first(args, env_opt, 1, "resume [ENV] HOST")
    _drain(env, host, False, fmt)


@app.command("reasons")
def lab_reasons(args: list[str] = typer.Argument(None, metavar="[ENV]"), env_opt: Path | None = _ENV_OPT,
                fmt: Format = _FMT) -> None:
    """Lab only: the drained hosts as `sinfo -R` prints them (the lab inventory's reasons hook; the real sinfo
    of a `lab up --slurm` lab)."""
    import getpass

    from . import monitoring as lab_monitoring

    env, _rest = _env_first(args or [], env_opt, 0, "reasons [ENV]")
    state = _running(env)
    try:
        known = set(state.hosts)
        lab_monitoring.drained(state.state_dir, known)  # what the containers asked for comes first
        if state.slurm_controller:  # the lab's real Slurm: its own sinfo -R
            from ...lab.hosts import containers

            text = containers.exec_in(state.hosts[state.slurm_controller].container,
                                      ["sinfo", "-R", "-o", SINFO_FORMAT], timeout=30).stdout
        else:
            text = sinfo_reasons(drained_state(state.state_dir), getpass.getuser())
    except (LabError, OSError) as exc:
        _fail(exc)
    if fmt is Format.json:
        _say(fmt, text.rstrip("\n"), sinfo=text)
    else:
        sys.stdout.write(text)


def _drain(env: Path, host: str, drain: bool, fmt: Format = Format.text, reason: str | None = None) -> None:
    from . import monitoring as lab_monitoring

    state = _running(env)
    try:
        lab_monitoring.drained(state.state_dir, set(state.hosts))  # what the containers asked for comes first
        changed = set_drained(state.state_dir, host, drain, set(state.hosts), reason)
        if state.slurm_controller:  # the lab's real Slurm (lab up --slurm): scontrol in the controller's container
            from ...lab.hosts import containers
            from ...lab.slurm import scontrol_argv

            if host in state.hosts and state.hosts[host].role == "compute":
                containers.exec_in(state.hosts[state.slurm_controller].container,
                                   scontrol_argv(host, drain, reason), timeout=30)
    except (LabError, OSError) as exc:
        _fail(exc)
    word = "drained" if drain else "resumed"
    _say(fmt, f"{host} {word}" if changed else f"{host} was already {word}", host=host, state=word,
         changed=changed)


app.add_typer(cable_app, name="cable")  # the technician's physical work (cli/lab_cable.py)
