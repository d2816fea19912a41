"""up / down / status of a whole lab.

``up(spec)``: image (cached) -> keys -> podman network -> one container per
host -> ibsim in its own netns on the lab bridge -> OpenSM in the
subnet-manager host's container -> wait until every HCA is Active and every
sshd answers.  Re-running ``up`` with the same spec while everything is up
does nothing.  ``down(state_dir)`` removes exactly what lab.json records and
is idempotent.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from clusterforge.lab import drain_outbox, slurm
from clusterforge.lab.errors import CommandError, LabError
from clusterforge.lab.fabric_tools import (
    FabricClient,
    ibstat_many,
    opensm_argv,
    opensm_running,
    start_opensm,
    stop_opensm,
)
from clusterforge.lab.faults import FaultInjector
from clusterforge.lab.guestfiles import GUEST_ETC, GUEST_SBIN, write_guest_files
from clusterforge.lab.hosts import containers, hostns, netns
from clusterforge.lab.hosts.podman import podman_usable
from clusterforge.lab.ibsim import (
    DEFAULT_REMOTE_PORT,
    Console,
    RemoteEndpoint,
    ibsim_running,
    start_ibsim,
    stop_ibsim,
)
from clusterforge.lab.image import DEFAULT_PACKAGES, build_image, check_shape
from clusterforge.lab.inotify import check_systemd_room
from clusterforge.lab.monitoring_standins import LAB_DIR, host_dir
from clusterforge.lab.netfile import NetFile, parse_netfile
from clusterforge.lab.observe import parse_ibstat
from clusterforge.lab.proc import is_alive, run, stop_process
from clusterforge.lab.spec import LabSpec, validate_spec
from clusterforge.lab.sshkeys import ssh_argv
from clusterforge.lab.state import (
    HostRecord,
    LabState,
    read_state,
    remove_state,
    write_state,
)
from clusterforge.lab.technician import DRAINED, Technician, cabled_peers, read_journal
from clusterforge.lab.technician import JOURNAL as TECHNICIAN_JOURNAL
from clusterforge.util.ticks import Ticks

GUEST_INIT = GUEST_SBIN + "/cf-lab-init"


@dataclass
class HostStatus:
    name: str
    state: str | None  # "running", podman's other states, or None if missing
    ssh: bool


@dataclass
class LabStatus:
    lab: str
    mode: str
    complete: bool
    network: bool
    ibsim: bool
    opensm: bool
    hosts: list[HostStatus] = field(default_factory=list)
    faults: int = 0

    @property
    def healthy(self) -> bool:
        return (
            self.complete and self.network and self.ibsim and self.opensm
            and all(h.state == "running" and h.ssh for h in self.hosts)
        )


# -- public API ------------------------------------------------------------------


def up(
    spec: LabSpec,
    *,
    mode: str = "auto",
    packages: Sequence[str] = DEFAULT_PACKAGES,
    timeout: float = 300.0,
    ticks: Ticks | None = None,
) -> LabState:
    """Bring the lab up (idempotent); return its state.

    ``mode``: "podman" (one container per host), "netns" (one network
    namespace + sshd per host, sharing this machine's file system) or "auto"
    (podman when it can run here, else netns).  The mode in use is recorded
    in ``LabState.mode``.  ``ticks`` is told each host started and each stage (a progress bar).
    """
    ticks = ticks if ticks is not None else Ticks()
    validate_spec(spec)
    state_dir = spec.state_dir.resolve()
    net = parse_netfile(spec.netfile.resolve())
    _check_hcas(spec, net)
    for h in spec.hosts:
        check_shape(h.shape)
    digest = spec.digest()
    existing = read_state(state_dir)
    if existing is not None:
        if existing.spec_digest != digest:
            raise LabError(
                f"lab {existing.lab} in {state_dir} was started from a different spec; "
                "run down() first"
            )
        if mode in ("auto", existing.mode) and status(state_dir).healthy:
            return existing
        down(state_dir)

    chosen = _choose_mode(mode)
    if spec.slurm is not None and chosen != "podman":
        raise LabError("lab up --slurm needs podman mode (Slurm is installed in the lab image); this lab would "
                       f"run in {chosen} mode: nothing started")
    ticks.expect(len(spec.hosts) + 2 + (chosen == "podman") + (spec.start_sm or spec.sm_sim_host is not None)
                 + (spec.slurm is not None))
    deadline = time.monotonic() + timeout
    state = LabState(
        lab=spec.name, mode=chosen, state_dir=state_dir, spec_digest=digest,
        network_cidr=spec.network_cidr, gateway=spec.gateway,
        ibsim_address=spec.ibsim_address, netfile=net.path,
    )
    state_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(state_dir, 0o700)
    write_state(state)
    try:
        for h in spec.hosts:
            # store ibsim node ids: a description as SIM_HOST works too, but
            # makes every client warn "attached as client N at node <id>"
            state.hosts[h.name] = HostRecord(
                h.name, h.address, h.role, [(x.device, net.resolve(x.sim_host)) for x in h.hcas], shape=h.shape
            )
        if chosen == "podman":
            _up_podman_hosts(spec, state, packages, ticks)
        else:
            _up_netns_hosts(spec, state, ticks)

        state.netns = f"cf-lab-{spec.name}-ibsim"
        state.veth = netns.short_ifname(spec.name, "s")
        write_state(state)
        netns.create_netns_on_bridge(
            state.netns, state.bridge, state.veth, netns.short_ifname(spec.name, "n"),
            f"{spec.ibsim_address}/{spec.network.prefixlen}",
        )
        endpoint = RemoteEndpoint(spec.ibsim_address, DEFAULT_REMOTE_PORT, state.netns)
        state.ibsim = start_ibsim(net.path, state_dir / "ibsim", endpoint)
        write_state(state)
        ticks.tick("simulator started")

        sm = spec.sm_hosts[0] if spec.sm_hosts else None
        if sm is not None and spec.start_sm:
            state.opensm_host = sm.name
            write_state(state)
            _start_opensm(spec, state, sm.name)
            write_state(state)
            _wait_fabric_active(state, deadline)
            ticks.tick("fabric active")
        elif sm is None and spec.sm_sim_host is not None:
            # OpenSM beside the simulator, as the (container-less) SM node's HCA
            sim_host = net.resolve(spec.sm_sim_host)
            client = FabricClient(state.ibsim.endpoint, sim_host, state_dir / "scratch")
            state.opensm = start_opensm(client, sim_host, state_dir / "opensm", config=spec.opensm_config,
                                        sweep_interval=spec.sm_sweep_interval,
                                        timeout=max(30.0, deadline - time.monotonic()))
            write_state(state)
            _wait_fabric_active(state, deadline)
            ticks.tick("fabric active")
        _wait_ssh(state, deadline)
        ticks.tick("ssh up")
        if spec.slurm is not None:
            slurm.start(spec.slurm, state, max(30.0, deadline - time.monotonic()))
            ticks.tick("slurm up")
        state.complete = True
        write_state(state)
        return state
    except BaseException:
        # keep the original error; lab.json still lists whatever down() left
        with contextlib.suppress(Exception):
            down(state_dir)
        raise


def down(state_dir: Path) -> None:
    """Stop and remove exactly what lab.json records.  Idempotent."""
    state_dir = state_dir.resolve()
    state = read_state(state_dir)
    if state is None:
        return
    errors: list[str] = []

    def attempt(what: str, fn: Callable[..., object], *args: object) -> None:
        try:
            fn(*args)
        except Exception as exc:
            errors.append(f"{what}: {exc}")

    if state.opensm is not None:
        attempt("opensm", stop_opensm, state.opensm)
    if state.ibsim is not None:
        attempt("ibsim", stop_ibsim, state.ibsim)
    for rec in state.hosts.values():
        if rec.container:
            attempt(f"container {rec.container}", containers.remove_container, rec.container)
        if rec.sshd is not None:
            attempt(f"sshd of {rec.name}", stop_process, rec.sshd)
        if rec.netns:
            attempt(f"netns {rec.netns}", hostns.remove_host_netns, rec.netns, rec.veth)
    if state.netns:
        attempt("ibsim netns", netns.delete_netns, state.netns, state.veth)
    if state.network:
        attempt("network", containers.remove_network, state.network)
    if state.bridge:
        # ours in netns mode; in podman mode netavark keeps a bridge that still
        # had a foreign port (the simulator's veth) when the network went away
        attempt("bridge", netns.delete_link, state.bridge)
    if errors:
        raise LabError("down left resources behind:\n  " + "\n  ".join(errors))
    remove_state(state_dir)
    for sub in ("ibsim", "scratch", "hosts", "guest", "opensm", "run"):
        shutil.rmtree(state_dir / sub, ignore_errors=True)
    if state.faults_journal.exists():
        state.faults_journal.unlink()
    for name in (TECHNICIAN_JOURNAL, DRAINED):  # what the technician did goes with the lab
        (state_dir / name).unlink(missing_ok=True)


def status(state_dir: Path) -> LabStatus:
    """What is running of the lab recorded in ``state_dir`` (probes ssh on every host)."""
    state_dir = state_dir.resolve()
    state = read_state(state_dir)
    if state is None:
        raise LabError(f"no lab recorded in {state_dir}")
    if state.mode == "podman":
        net_ok = bool(state.network) and containers.network_info(state.network) is not None
    else:
        net_ok = bool(state.bridge) and netns.link_exists(state.bridge)
    sim_ok = state.ibsim is not None and ibsim_running(state.ibsim)

    def probe(rec: HostRecord) -> HostStatus:
        if rec.container:
            hstate = containers.container_status(rec.container)
        else:
            hstate = "running" if rec.sshd is not None and is_alive(rec.sshd) else None
        ssh_ok = False
        if hstate == "running":
            res = run(ssh_command(state, rec.name, ["true"], connect_timeout=3),
                      timeout=15, check=False)
            ssh_ok = res.returncode == 0
        return HostStatus(rec.name, hstate, ssh_ok)

    with ThreadPoolExecutor(max_workers=8) as pool:
        hosts = list(pool.map(probe, state.hosts.values()))
    sm_ok = True
    if state.opensm is not None:
        sm_ok = opensm_running(state.opensm)
    elif state.opensm_host:
        rec = state.hosts[state.opensm_host]
        sm_ok = containers.container_status(rec.container) == "running" and (
            containers.exec_in(rec.container, ["pgrep", "-x", "opensm"], timeout=15,
                               check=False).returncode == 0
        )
    faults = 0
    if state.faults_journal.exists():
        faults = len(json.loads(state.faults_journal.read_text()))
    return LabStatus(state.lab, state.mode, state.complete, net_ok, sim_ok, sm_ok, hosts,
                     faults)


def ssh_command(
    state: LabState, host: str, command: Sequence[str], *, connect_timeout: int = 5
) -> list[str]:
    """argv that runs ``command`` on a lab host with the lab key, strict host checking."""
    rec = state.hosts[host]
    return ssh_argv(state.ssh_key, state.known_hosts, rec.address, command,
                    connect_timeout=connect_timeout)


def fabric_client(state: LabState, sim_host: str | None = None) -> FabricClient:
    """Host-side diag tools for this lab (attached as the SM host's first HCA by default)."""
    if state.ibsim is None:
        raise LabError("lab has no simulator")
    if sim_host is None:
        rec = state.hosts.get(state.opensm_host) if state.opensm_host else None
        if rec is None or not rec.hcas:
            rec = next((r for r in state.hosts.values() if r.hcas), None)
        if rec is None:
            raise LabError("no host with an HCA in this lab")
        sim_host = rec.hcas[0][1]
    return FabricClient(state.ibsim.endpoint, sim_host, state.state_dir / "scratch")


def fault_injector(state: LabState) -> FaultInjector:
    if state.ibsim is None:
        raise LabError("lab has no simulator")
    net = parse_netfile(state.netfile)
    return FaultInjector(Console(state.ibsim), net, fabric_client(state), state.faults_journal,
                         cabled_peers(net, read_journal(state.state_dir)))


def technician(state: LabState) -> Technician:
    """The technician's hands in this lab's simulated fabric (technician.py)."""
    if state.ibsim is None:
        raise LabError("lab has no simulator")
    return Technician(Console(state.ibsim), parse_netfile(state.netfile), state.state_dir)


# -- steps -----------------------------------------------------------------------


def _check_hcas(spec: LabSpec, net: NetFile) -> None:
    problems = []
    for h in spec.hosts:
        for hca in h.hcas:
            try:
                node = net.nodes[net.resolve(hca.sim_host)]
            except LabError as exc:
                problems.append(f"host {h.name} {hca.device}: {exc}")
                continue
            if node.kind != "Ca":
                problems.append(f"host {h.name} {hca.device}: {hca.sim_host} is a {node.kind}")
    if problems:
        raise LabError("spec does not match the net file:\n  " + "\n  ".join(problems))


def _choose_mode(mode: str) -> str:
    if mode not in ("auto", "podman", "netns"):
        raise LabError(f"mode {mode!r}: auto, podman or netns")
    reasons = []
    if mode in ("auto", "podman"):
        ok, why = podman_usable()
        if ok:
            return "podman"
        reasons.append(f"podman: {why}")
    if mode in ("auto", "netns"):
        ok, why = hostns.netns_usable()
        if ok and os.geteuid() == 0:
            return "netns"
        reasons.append(f"netns: {why if not ok else 'needs root'}")
    raise LabError("no lab mode can run here: " + "; ".join(reasons))


def _up_podman_hosts(spec: LabSpec, state: LabState, packages: Sequence[str], ticks: Ticks) -> None:
    if spec.systemd:
        check_systemd_room(len(spec.hosts))
    wanted = tuple(packages) + (tuple(p for p in slurm.PACKAGES if p not in packages) if spec.slurm else ())
    state.image = build_image(wanted, systemd=spec.systemd)
    for shape in sorted({rec.shape for rec in state.hosts.values()} - {"debian12"}):
        tag = build_image(wanted, systemd=spec.systemd, shape=shape)
        for rec in state.hosts.values():
            rec.image = tag if rec.shape == shape else rec.image
    write_state(state)
    ticks.tick("image ready")
    state.network = containers.network_name(spec.name)
    write_state(state)
    info = containers.create_network(state.network, spec.network_cidr, spec.gateway, spec.name)
    state.bridge = info.bridge
    for rec in state.hosts.values():
        rec.container = containers.container_name(spec.name, rec.name)
    write_state(state)
    write_guest_files(spec, state)
    drain_outbox.install_standin(state.state_dir / "guest" / "sbin")
    if spec.slurm is not None:  # the daemons start once every container answers ssh (_start_slurm)
        slurm.write_files(spec.slurm, {h.name: h.address for h in spec.hosts},
                          {h.name: state.state_dir / "hosts" / h.name for h in spec.hosts})
    for rec in state.hosts.values():
        rec.container_id = _start_container(spec, state, rec)
        write_state(state)
    for rec in state.hosts.values():
        containers.wait_running(rec.container)
        ticks.tick(f"{rec.name} running")


def _up_netns_hosts(spec: LabSpec, state: LabState, ticks: Ticks) -> None:
    shaped = sorted(h.name for h in spec.hosts if h.shape != "debian12")
    if shaped:
        raise LabError(f"{', '.join(shaped)}: an Ubuntu- or EL-shaped lab host needs podman mode (a netns host "
                       "shares this machine's root file system)")
    if any(c.isspace() for c in str(state.state_dir)):
        raise LabError("netns mode needs a state_dir path without whitespace")
    state.bridge = netns.short_ifname(spec.name, "b")
    write_state(state)
    hostns.create_bridge(state.bridge, f"{spec.gateway}/{spec.network.prefixlen}")
    for i, rec in enumerate(state.hosts.values()):
        rec.netns = f"cf-lab-{spec.name}-{rec.name}"[:64]
        rec.veth = netns.short_ifname(spec.name, f"h{i}")
    write_state(state)
    write_guest_files(spec, state)
    for rec in state.hosts.values():
        hostns.create_host_netns(rec.netns, state.bridge, rec.veth,
                                 f"{rec.address}/{spec.network.prefixlen}")
        write_state(state)
        hd = state.state_dir / "hosts" / rec.name
        rec.sshd = hostns.start_sshd(rec.netns, rec.name, state.state_dir / "guest" / "sbin",
                                     hd / "sshd_config", state.state_dir / "run" / rec.name)
        write_state(state)
        ticks.tick(f"{rec.name} running")


def _start_container(spec: LabSpec, state: LabState, rec: HostRecord) -> str:
    hd = state.state_dir / "hosts" / rec.name
    env = [("IBSIM_SERVER_NAME", spec.ibsim_address),
           ("IBSIM_SERVER_PORT", str(DEFAULT_REMOTE_PORT))]
    if rec.hcas:
        env.append(("SIM_HOST", rec.hcas[0][1]))
    containers.remove_container(rec.container)  # leftover of a crashed run
    standins = host_dir(state.state_dir, rec.name)  # the monitoring stand-ins' files (monitoring_standins)
    standins.mkdir(parents=True, exist_ok=True)
    drain_box = drain_outbox.outbox(state.state_dir)  # the lab's drain from inside (the drain hook's stand-in)
    drain_box.mkdir(parents=True, exist_ok=True)
    return containers.run_host_container(
        name=rec.container, hostname=rec.name, image=rec.image or state.image, network=state.network,
        address=rec.address, lab=spec.name,
        mounts=[(hd, GUEST_ETC), (state.state_dir / "guest" / "sbin", GUEST_SBIN), (standins, LAB_DIR)],
        rw_mounts=[(drain_box, drain_outbox.OUTBOX)],
        env=env, entrypoint=GUEST_INIT, systemd=spec.systemd,
    )


def _start_opensm(spec: LabSpec, state: LabState, host: str) -> None:
    rec = state.hosts[host]
    if state.mode == "netns":
        client = FabricClient(RemoteEndpoint(spec.ibsim_address, DEFAULT_REMOTE_PORT),
                              rec.hcas[0][1], state.state_dir / "scratch")
        state.opensm = start_opensm(
            client, rec.hcas[0][1], state.state_dir / "opensm", config=spec.opensm_config,
            sweep_interval=spec.sm_sweep_interval, netns=rec.netns,
        )
        return
    config = Path(GUEST_ETC, "opensm.conf") if spec.opensm_config is not None else None
    if spec.systemd:  # the lab image's opensm.service (the wrapper, /etc/opensm/opensm.conf)
        containers.exec_in(rec.container, ["systemctl", "start", "opensm"], timeout=60)
        return
    argv = opensm_argv(log_file="/var/log/opensm.log", config=config,
                       sweep_interval=spec.sm_sweep_interval)
    argv[0] = GUEST_SBIN + "/opensm"  # the wrapper: LD_PRELOAD + simulator address
    containers.exec_detached(rec.container, argv)


def _wait_fabric_active(state: LabState, deadline: float, only: set[str] | None = None) -> None:
    """Every declared HCA (or those of `only`, ibsim node ids) reports its port Active (needs the SM to have
    swept)."""
    client = fabric_client(state)
    sim_hosts = [s for r in state.hosts.values() for _, s in r.hcas if only is None or s in only]
    if not sim_hosts:
        return
    pending = list(sim_hosts)
    last: dict[str, str] = {}
    while True:
        results = ibstat_many(client, pending, timeout=20)
        still = []
        for sh, res in results.items():
            cas = parse_ibstat(res.stdout) if res.returncode == 0 else []
            port_states = [p.state for ca in cas for p in ca.ports]
            last[sh] = ",".join(port_states) or (res.stderr.strip()[-200:] or "no output")
            if not port_states or any(s != "Active" for s in port_states):
                still.append(sh)
        pending = still
        if not pending:
            return
        if time.monotonic() >= deadline:
            detail = ", ".join(f"{s}: {last.get(s)}" for s in pending)
            raise LabError(f"HCAs not Active before the deadline: {detail}")
        time.sleep(0.5)


def wait_hcas_active(state: LabState, sim_hosts: set[str], timeout: float = 60.0) -> None:
    """The lab HCAs among `sim_hosts` (ibsim node ids; others are ignored) report their ports Active, as
    their own `ibstat` reads them: plane by plane, whatever subnet each is in. A LabError past `timeout`."""
    _wait_fabric_active(state, time.monotonic() + timeout, sim_hosts)


def _wait_ssh(state: LabState, deadline: float) -> None:
    def probe(host: str) -> tuple[str, str]:
        err = ""
        while time.monotonic() < deadline:
            try:
                res = run(ssh_command(state, host, ["true"], connect_timeout=2),
                          timeout=15, check=False)
            except CommandError as exc:
                err = str(exc)
                continue
            if res.returncode == 0:
                return host, ""
            err = res.stderr.strip()
            time.sleep(0.2)
        return host, err or "timeout"

    with ThreadPoolExecutor(max_workers=8) as pool:
        failed = [(h, e) for h, e in pool.map(probe, list(state.hosts)) if e]
    if failed:
        raise LabError("sshd not reachable: " + "; ".join(f"{h}: {e}" for h, e in failed))
