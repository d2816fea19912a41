"""The local lab for an inventory environment: the bridge between the model and `clusterforge.lab`.

The lab package is stdlib-only and knows nothing of the inventory; this module maps an
environment onto it: one container per node at its management address, each HCA a view of
the rendered ibsim net file, the lab's state under `.lab/<env>/`, inventory cable ids to
simulator ports for fault injection, and lab SSH settings for collection.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..check.checked import Checked
from ..collect.plan import Target, default_targets, fabric_tools, plane_ports
from ..collect.ssh import SshConfig
from ..inventory.env_entries import dir_name
from ..inventory.selection import SelectionError, default_rehearsal, select_nodes
from ..lab import SM_ROLE, LabHca, LabHost, LabSpec, LabState, PortRef, down, read_state, ssh_command, up
from ..lab.errors import LabError
from ..lab.ibsim import MAX_CLIENTS
from ..lab.netfile import parse_netfile
from ..lab.proc import run
from ..lab.slurm import SlurmLab
from ..model.index import Index
from ..render import healthcheck_lines, install_path, plane_services, render, write_tree
from ..util.fsutil import write_atomic
from ..util.ticks import Ticks
from ..validate.planes import switch_plane
from .hostfile import put_file

LAB_ROOT = Path(os.environ.get("CLUSTERFORGE_LAB_ROOT", ".lab"))
SM_ETC = "/etc/opensm"
LAB_RANGE = ipaddress.IPv4Network("198.18.0.0/15")
"""RFC 2544's benchmarking range: where every lab network lives (never a routed, real address)."""
LAB_BLOCK = ipaddress.ip_address("198.18.64.0")
"""Where an environment with real (non-lab) management addresses is mapped by default (`--cidr` moves it)."""
SMALL_ENV = 16
"""`lab up` without `--limit` starts every node of an environment up to this size, else `default_rehearsal`."""
MAPPING = "mapping.json"


@dataclass(frozen=True)
class LabPaths:
    env_name: str
    state_dir: Path
    render_dir: Path

    @property
    def netfile(self) -> Path:
        return self.render_dir / "fabric" / "ibsim.net"

    @property
    def mapping(self) -> Path:
        """What `lab up` selected and where each inventory address went (`lab status` shows it)."""
        return self.state_dir.parent / MAPPING


def paths(env: Path, root: Path | None = None) -> LabPaths:
    root = root if root is not None else Path(os.environ.get("CLUSTERFORGE_LAB_ROOT", LAB_ROOT))
    name = dir_name(env)
    return LabPaths(name, root / name / "state", root / name / "render")


def lab_name(env_name: str) -> str:
    return f"cf-{env_name}"[:24]


def lab_cidr(mgmt_cidr: str, override: str | None = None) -> str:
    """The lab network of an environment: its own management network when that already is a lab range
    (198.18.0.0/15), else a network of the same size at 198.18.64.0 (or `override`): inventory addresses
    are mapped there host part for host part and are never used."""
    if override is not None:
        net = ipaddress.ip_network(override, strict=True)
        if not isinstance(net, ipaddress.IPv4Network) or not net.subnet_of(LAB_RANGE):
            raise LabError(f"--cidr {override}: a lab network must lie in {LAB_RANGE} (the benchmarking range)")
        return str(net)
    mgmt = ipaddress.ip_network(mgmt_cidr)
    if isinstance(mgmt, ipaddress.IPv4Network) and mgmt.subnet_of(LAB_RANGE):
        return str(mgmt)
    prefix = min(max(mgmt.prefixlen, 16), 29)
    return str(ipaddress.ip_network(f"{LAB_BLOCK}/{prefix}", strict=False))


def selection(index: Index, limit: tuple[str, ...] = ()) -> list[str]:
    """The nodes a lab starts: `limit` as deploy's `--limit` (`all` for every node); without one, every
    node of a small environment (the lab inventory), else `default_rehearsal` (every role once)."""
    if limit == ("all",):
        return [n.name for n in index.inv.nodes]
    if limit:
        try:
            return select_nodes(index, limit)
        except SelectionError as exc:
            raise LabError(str(exc)) from None
    if len(index.inv.nodes) <= SMALL_ENV:
        return [n.name for n in index.inv.nodes]
    return default_rehearsal(index)


def sm_nodes_by_priority(index: Index) -> list[str]:
    """The inventory's SM nodes, master first."""
    sm = index.inv.opensm
    return [s.node for s in sorted(sm.sm_nodes, key=lambda s: -s.priority)] if sm is not None else []


def prepare(checked: Checked, env: Path, root: Path | None = None, *, limit: tuple[str, ...] = (),
            cidr: str | None = None, systemd: bool = False) -> tuple[LabSpec, LabPaths]:
    """Render the environment into the lab's folder and describe the lab to start: the selected nodes
    (see `selection`) on the lab network, the whole fabric simulated; when no SM node is selected,
    OpenSM runs beside the simulator as the master SM node's HCA, with its rendered configuration."""
    p = paths(env, root)
    write_tree(p.render_dir, render(checked.index, p.env_name).files)
    plan = checked.index.inv.addressing.management
    if plan is None:
        raise LabError("the lab needs addressing.management: the containers sit on that subnet")
    nodes = selection(checked.index, limit)
    spec = lab_spec(checked.index, name=lab_name(p.env_name), cidr=lab_cidr(str(plan.cidr), cidr),
                    state_dir=p.state_dir, netfile=p.netfile, nodes=nodes)
    if systemd:
        spec = dataclasses.replace(spec, systemd=True)
    sms = sm_nodes_by_priority(checked.index)
    if sms and not spec.sm_hosts and not any(s in nodes for s in sms):
        spec = _beside_simulator(spec, checked.index, p, sms[0])
    return spec, p


def _beside_simulator(spec: LabSpec, index: Index, p: LabPaths, sm: str) -> LabSpec:
    """`spec` with OpenSM on the lab machine as `sm`'s first HCA, its rendered files read from the render."""
    hw = index.hardware.get(sm)
    if hw is None or not hw.hcas:
        return spec
    if plane_ports(index, sm):
        raise LabError(f"rail planes: OpenSM beside the simulator runs one instance, and {sm} needs one per "
                       f"plane: select the SM nodes (`--limit {sm}` with the nodes you want)")
    sm_dir = p.render_dir / "opensm" / sm
    conf = (sm_dir / "opensm.conf").read_text(encoding="utf-8").replace(f"{SM_ETC}/", f"{sm_dir.resolve()}/")
    local = sm_dir / "opensm.lab.conf"
    local.write_text(conf, encoding="utf-8")
    sim_id = {node.desc: node.node_id for node in parse_netfile(spec.netfile).nodes.values()}
    return dataclasses.replace(spec, opensm_config=local, start_sm=False,
                               sm_sim_host=sim_id.get(f"{sm} {hw.hcas[0].name}", f"{sm} {hw.hcas[0].name}"))


def lab_spec(index: Index, *, name: str, cidr: str, state_dir: Path, netfile: Path,
             nodes: Iterable[str] | None = None, start_sm: bool = False) -> LabSpec:
    """One lab host per inventory node (or the `nodes` subset) on `cidr`: each keeps the host part
    of its management address, and each HCA is the net file's node `<host> <hca>` (by ibsim id)."""
    net = ipaddress.ip_network(cidr)
    sim_id = {node.desc: node.node_id for node in parse_netfile(netfile).nodes.values()}
    mgmt = index.inv.addressing.management
    base = int(ipaddress.ip_network(str(mgmt.cidr)).network_address) if mgmt else int(net.network_address)
    addrs = index.addresses
    wanted = set(nodes) if nodes is not None else None
    planes = switch_plane(index)
    hosts = []
    for node in index.inv.nodes:
        if wanted is not None and node.name not in wanted:
            continue
        ip = addrs.mgmt.get(node.name)
        if ip is None:
            raise LabError(f"{node.name} has no management address")
        hcas = tuple(
            LabHca(h.name, sim_id[f"{node.name} {h.name}"], hca_plane(index, planes, node.name, h.name))
            for h in index.hardware[node.name].hcas
            if f"{node.name} {h.name}" in sim_id
        )
        offset = ip - base
        if not 1 < offset < net.num_addresses - 2:
            raise LabError(f"{node.name}: {addrs.text(ip)} has no place on the lab network {net} "
                           "(host part out of range, or the gateway's/simulator's): pick another --cidr")
        address = str(net.network_address + offset)
        hosts.append(LabHost(node.name, address, hcas, node.role, index.hardware[node.name].os))
    return LabSpec(name=name, network_cidr=cidr, hosts=tuple(hosts), netfile=netfile, state_dir=state_dir,
                   start_sm=start_sm)


def hca_plane(index: Index, planes: dict[str, int], node: str, hca: str) -> int | None:
    """Rail planes: the plane of the leaf an HCA's first cabled port reaches; None without planes."""
    for dev in index.hardware[node].hcas:
        for port in dev.ports if dev.name == hca and planes else ():
            cable = index.cable_at.get((node, hca, port.port))
            far = None if cable is None else cable.b if cable.a.device == node else cable.a
            if far is not None and far.device in planes:
                return planes[far.device]
    return None


def running(env: Path, root: Path | None = None) -> LabState | None:
    """The lab state of this environment when its lab has been brought up, else None."""
    p = paths(env, root)
    try:
        state = read_state(p.state_dir)
    except (LabError, OSError, ValueError):
        return None
    return state if state is not None and state.complete else None


def start_subnet_manager(state: LabState, p: LabPaths, sm_node: str, timeout_s: float = 60) -> tuple[str, ...]:
    """Push the rendered OpenSM files to the SM container, where the deploy installs them, and start OpenSM
    there (idempotent): `opensm`, or with rail planes one `opensm-plane@<P>` per plane (its plane's
    /etc/opensm/plane<P>/opensm.conf, attached as the HCA in that plane). Returns the units."""
    root = p.render_dir / "opensm" / sm_node
    dests = []
    for f in sorted(x for x in root.rglob("*") if x.is_file()):
        where = install_path(f.relative_to(p.render_dir).as_posix())
        if where is not None:
            put_file(state, sm_node, where[1], f.read_text(encoding="utf-8"))
            dests.append(where[1])
    units = plane_services(dests)
    # with systemd (a `--systemd` lab) as the units the deploy manages, else as plain background processes
    if units == ("opensm",):
        script = ('if [ -d /run/systemd/system ]; then systemctl enable --now opensm; '
                  'elif ! pgrep -x opensm >/dev/null; then opensm -B -F "$1/opensm.conf" -f /var/log/opensm.log; fi')
        run(ssh_command(state, sm_node, ["sh", "-c", script, "start-sm", SM_ETC]), timeout=timeout_s)
        return units
    planes = [u.split("@", 1)[1] for u in units]
    script = ('if [ -d /run/systemd/system ]; then systemctl daemon-reload; for p in "$@"; do '
              'systemctl enable --now "opensm-plane@$p"; done; else for p in "$@"; do '
              'pgrep -f "/etc/opensm/plane$p/opensm.conf" >/dev/null || CLUSTERFORGE_LAB_OPENSM_PLANE=$p '
              'OSM_CACHE_DIR=/var/cache/opensm/plane$p OSM_TMP_DIR=/var/cache/opensm/plane$p '
              'opensm -B -F "/etc/opensm/plane$p/opensm.conf"; done; fi')
    run(ssh_command(state, sm_node, ["sh", "-c", script, "start-sm", *planes]), timeout=timeout_s)
    return units


@dataclass(frozen=True)
class LabUp:
    state: LabState
    paths: LabPaths
    spec: LabSpec
    sm_started: tuple[str, ...]
    """SM nodes whose container runs OpenSM (master first); empty when OpenSM runs beside the simulator."""
    standins: int
    seconds: float


def bring_up(checked: Checked, env: Path, *, limit: tuple[str, ...] = (), cidr: str | None = None,
             mode: str = "auto", start_sm: bool = True, root: Path | None = None, systemd: bool = False,
             replace: bool = False, sm_timeout_s: float = 120.0, ticks: Ticks | None = None,
             slurm: bool = False) -> LabUp:
    """`clusterforge lab up`: prepare, start the containers and the whole simulated fabric, OpenSM on every
    selected SM node (master first: an HA pair elects by priority) or beside the simulator, the GPU
    stand-ins; record the address mapping. Idempotent (a healthy lab of the same spec is kept); a lab of this
    environment started otherwise is refused, or with `replace` brought down first. `ticks` is told each
    host and stage as it is done (a progress bar). `slurm`: real Slurm in the lab (lab/slurm.py)."""
    t0 = time.monotonic()
    ticks = ticks if ticks is not None else Ticks()
    spec, p = prepare(checked, env, root, limit=limit, cidr=cidr, systemd=systemd)
    if slurm:
        spec = dataclasses.replace(spec, slurm=slurm_lab(checked.index, spec))
    if not start_sm:  # the SM nodes' OpenSM is left to the deploy (beside the simulator it still runs)
        spec = dataclasses.replace(spec, start_sm=False)
    existing = read_state(p.state_dir)
    if existing is not None and existing.spec_digest != spec.digest() and replace:
        down(p.state_dir)
        p.mapping.unlink(missing_ok=True)
    elif existing is not None and existing.spec_digest != spec.digest():
        names = ", ".join(sorted(existing.hosts)[:6]) + (", ..." if len(existing.hosts) > 6 else "")
        raise LabError(f"a lab of {env} is already up with another selection, network or kind (systemd) "
                       f"({len(existing.hosts)} node(s): {names}): `clusterforge lab down {env}` first, "
                       "or `lab up --replace`")
    ticks.expect(1)  # the stand-ins
    state = up(spec, mode=mode, ticks=ticks)
    write_mapping(p, checked, env, state)
    started: list[str] = []
    if start_sm:
        ticks.expect(sum(1 for sm in sm_nodes_by_priority(checked.index) if sm in state.hosts))
        for sm in sm_nodes_by_priority(checked.index):
            if sm in state.hosts:
                start_subnet_manager(state, p, sm)
                started.append(sm)
                ticks.tick(f"OpenSM on {sm}")
        if started:
            ports = plane_ports(checked.index, started[0])
            for hca, _ in ports.values() or [(None, 0)]:  # rail planes: a master in every plane
                wait_sm_master(state, started[0], sm_timeout_s, hca)
    from .standins import install_fw_standins, install_gpu_standins, write_monitoring_standins

    standins = install_gpu_standins(state, checked) + install_fw_standins(state, checked)
    write_monitoring_standins(state, checked)
    ticks.tick("stand-ins installed")
    return LabUp(state, p, spec, tuple(started), standins, time.monotonic() - t0)


def slurm_lab(index: Index, spec: LabSpec) -> SlurmLab:
    """The lab's Slurm: slurmctld on the first selected SM node (by priority), slurmd on each selected compute
    node, the health check's slurm.conf lines as the render writes them."""
    here = {h.name: h for h in spec.hosts}
    sms = [sm for sm in sm_nodes_by_priority(index) if sm in here]
    nodes = tuple(h.name for h in spec.hosts if h.role == "compute")
    if not sms or not nodes:
        raise LabError("lab up --slurm: slurmctld runs on a subnet-manager node and slurmd on compute nodes: "
                       f"select at least one of each (selected: {', '.join(here) or 'none'})")
    return SlurmLab(sms[0], nodes, tuple(healthcheck_lines(index.inv.health_check)))


def wait_sm_master(state: LabState, host: str, timeout_s: float = 120.0, hca: str | None = None) -> str:
    """Wait until `sminfo` on `host` (through its HCA `hca`: rail planes, the plane of that HCA) names a
    MASTER SM; its output."""
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        res = run(ssh_command(state, host, ["sminfo", *(["-C", hca] if hca else [])]), timeout=60, check=False)
        last = (res.stdout + res.stderr).strip()
        if res.returncode == 0 and "SMINFO_MASTER" in res.stdout:
            return res.stdout
        time.sleep(0.5)
    raise LabError(f"no master subnet manager seen from {host} within {timeout_s:g}s: {last[-300:]}")


def write_mapping(p: LabPaths, checked: Checked, env: Path, state: LabState) -> dict[str, object]:
    """Record (atomically) which nodes run where: inventory address -> lab address, and the fabric."""
    index = checked.index
    net = parse_netfile(state.netfile)
    in_lab = set(state.hosts)
    hosts = {
        name: {"inventory_address": index.addresses.text(index.addresses.mgmt[name])
               if name in index.addresses.mgmt else None,
               "lab_address": rec.address, "role": rec.role, "rack": index.nodes[name].rack,
               "hcas": [dev for dev, _ in rec.hcas]}
        for name, rec in state.hosts.items()
    }
    mgmt = index.inv.addressing.management
    data: dict[str, object] = {
        "environment": p.env_name, "inventory": str(env), "lab": state.lab,
        "inventory_network": str(mgmt.cidr) if mgmt is not None else None,
        "lab_network": state.network_cidr, "gateway": state.gateway, "simulator": state.ibsim_address,
        "hosts": hosts,
        "without_container": [n.name for n in index.inv.nodes if n.name not in in_lab],
        "fabric": {"switches": sum(1 for n in net.nodes.values() if n.kind == "Switch"),
                   "hca_ports": sum(1 for e in net.peers if net.nodes[e.node].kind == "Ca"),
                   "hcas": sum(1 for n in net.nodes.values() if n.kind == "Ca")},
        "opensm": ({"beside_simulator": state.opensm.sim_host} if state.opensm is not None
                   else {"nodes": [s for s in sm_nodes_by_priority(index) if s in in_lab]}),
    }
    write_atomic(p.mapping, json.dumps(data, indent=1, sort_keys=True) + "\n")
    return data


def read_mapping(env: Path, root: Path | None = None) -> dict[str, Any] | None:
    path = paths(env, root).mapping
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def collect_config(state: LabState) -> SshConfig:
    """The lab's SSH settings for collection. Hosts are read in parallel, each running one simulator client
    at a time, beside the fabric target's and every OpenSM's (one per HCA of an SM host at most: rail planes
    run one per plane): together within ibsim's client slots."""
    sms = sum(len(h.hcas) for h in state.hosts.values() if h.role == SM_ROLE) + (state.opensm is not None)
    return SshConfig(known_hosts=state.known_hosts, identity=state.ssh_key, user="root",
                     parallel=max(2, min(8, MAX_CLIENTS - 1 - sms)))


def ssh_reach(env: Path, index: Index) -> tuple[dict[str, str], SshConfig]:
    """Where and how commands reach ENV's hosts (accept --run, firmware flash|activate): its lab when one is up
    for it (the containers at their lab addresses, the lab's keys), else the inventory's hosts (management
    addresses; the deploy's SSH user, port, known_hosts)."""
    from ..collect.live import ssh_config

    state = running(env)
    if state is not None:
        return {name: rec.address for name, rec in state.hosts.items()}, collect_config(state)
    return {n: index.addresses.text(ip) for n, ip in index.addresses.mgmt.items()}, ssh_config(env, index)


def collect_targets(state: LabState, checked: Checked) -> tuple[list[Target], Target | None]:
    """Where validate collects from: the lab's containers only, at their lab addresses. The fabric is read
    from the master SM node's container, or from any lab host with an HCA when that node has none."""
    addresses = {name: rec.address for name, rec in state.hosts.items()}
    hosts, fabric = default_targets(checked.index, addresses)
    if fabric is None:
        first = next((n for n, rec in state.hosts.items() if rec.hcas), None)
        if first is not None:
            fabric = Target(first, addresses[first], fabric_tools())
    for t in [*hosts, *([fabric] if fabric else [])]:
        if not in_lab_network(state, t.address):
            raise LabError(f"refusing to collect from {t.host} at {t.address}: not on the lab network "
                           f"{state.network_cidr}")
    return hosts, fabric


def in_lab_network(state: LabState, address: str) -> bool:
    """Is `address` a lab host's address (inside the lab's network, which lies in the benchmarking range)?"""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    net = ipaddress.ip_network(state.network_cidr)
    return ip in net and isinstance(net, ipaddress.IPv4Network) and net.subnet_of(LAB_RANGE)


def cable_ports(checked: Checked, cable_id: str) -> tuple[PortRef, PortRef]:
    """The simulator ports (by node description) at both ends of an inventory cable."""
    cable = next((c for c in checked.inv.cables if c.id == cable_id), None)
    if cable is None:
        raise LabError(f"no cable {cable_id!r} in the inventory")
    ends = []
    for ref in (cable.a, cable.b):
        device = ref.device if ref.hca is None else f"{ref.device} {ref.hca}"
        ends.append(PortRef(device, ref.port))
    return ends[0], ends[1]

