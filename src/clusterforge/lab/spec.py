"""The lab's public input: a plain, frozen description of what to start.

Stdlib only, no inventory model: the lead maps the inventory onto these
dataclasses.  ``validate_spec`` rejects anything that would later end up
inside a podman argument, an ibsim console command or a file name in an
unsafe or ambiguous form.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from clusterforge.lab.errors import LabSpecError
from clusterforge.lab.slurm import SlurmLab

#: The role whose host runs OpenSM inside its container.
SM_ROLE = "subnet-manager"

_LAB_NAME = re.compile(r"^[a-z][a-z0-9-]{0,23}$")
_HOST_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_DEVICE = re.compile(r"^[A-Za-z0-9_]{1,31}$")
_ROLE = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
# ibsim keeps SIM_HOST in a 32-byte field (31 chars + NUL); '"' would end the
# console argument, '#' and '@' are reserved by the net-file parser.
_SIM_HOST = re.compile(r'^[^"#@\x00-\x1f]{1,31}$')


@dataclass(frozen=True)
class LabHca:
    """One HCA of a host, as a client of the simulated fabric.

    ``device`` is the name the host shows for it (``mlx5_0``): umad2sim only
    ever presents one CA called ``ibsim0``; the lab's guest wrappers map it back.
    ``sim_host`` selects the simulated node: an ibsim node id (``gpu01-mlx5_0``)
    or its node description (``gpu01 mlx5_0``), at most 31 characters.
    ``plane``: the rail plane (subnet) its port is in, when the fabric has rail planes: the
    per-plane OpenSM instance of that plane attaches as this HCA.
    """

    device: str
    sim_host: str
    plane: int | None = None


@dataclass(frozen=True)
class LabHost:
    """One inventory node: one container (or netns) with sshd."""

    name: str
    address: str
    hcas: tuple[LabHca, ...] = ()
    role: str = "compute"
    shape: str = "debian12"
    """The OS release the host is shaped as (lab/image.py SHAPE_PACKAGES): a LAB-ONLY Ubuntu- or EL-shaped
    container where the node declares one (podman mode only: netns hosts share this machine's root)."""

    @property
    def sim_hosts(self) -> tuple[str, ...]:
        return tuple(h.sim_host for h in self.hcas)


@dataclass(frozen=True)
class LabSpec:
    """A whole lab.

    ``network_cidr`` is an IPv4 network used only for the lab (suggested: a
    /24 out of the 198.18.0.0/15 benchmarking range).  Its first usable address
    is the host-side gateway, its last usable address is the simulator.
    """

    name: str
    network_cidr: str
    hosts: tuple[LabHost, ...]
    netfile: Path
    state_dir: Path
    opensm_config: Path | None = None
    sm_sweep_interval: int = 2
    #: False: do not start OpenSM on the subnet-manager host (e.g. the deploy
    #: under test starts it); ports then stay Initialize until an SM sweeps.
    start_sm: bool = True
    #: Run OpenSM on the lab machine, attached as this simulated HCA (an ibsim node
    #: id or description), when no lab host has the subnet-manager role: the
    #: fabric of an environment whose SM nodes have no container still gets an SM.
    sm_sim_host: str | None = None
    #: systemd as PID 1 in every container (``--systemd=always``): the deploy enables and starts real
    #: units. OpenSM is then a unit (``opensm.service``) that ``up`` starts only with ``start_sm``.
    systemd: bool = False
    #: Real Slurm (podman mode): slurmctld on `slurm.controller`, slurmd on `slurm.nodes` (lab/slurm.py).
    slurm: SlurmLab | None = None

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(self.network_cidr, strict=True)

    @property
    def gateway(self) -> str:
        return str(self.network.network_address + 1)

    @property
    def ibsim_address(self) -> str:
        return str(self.network.broadcast_address - 1)

    @property
    def sm_hosts(self) -> tuple[LabHost, ...]:
        return tuple(h for h in self.hosts if h.role == SM_ROLE)

    def host(self, name: str) -> LabHost:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(name)

    def digest(self) -> str:
        """Stable digest of everything that shapes the running lab."""
        data = asdict(self)
        data["netfile"] = str(self.netfile)
        data["state_dir"] = str(self.state_dir)
        data["opensm_config"] = str(self.opensm_config) if self.opensm_config else None
        blob = json.dumps(data, sort_keys=True, default=str).encode()
        for f in (self.netfile, self.opensm_config):
            if f is not None and f.is_file():
                blob += b"\0" + f.read_bytes()
        return hashlib.sha256(blob).hexdigest()


def validate_spec(spec: LabSpec) -> None:
    """Raise LabSpecError listing every problem found (not only the first)."""
    problems: list[str] = []
    if not _LAB_NAME.match(spec.name):
        problems.append(f"lab name {spec.name!r}: use [a-z][a-z0-9-], at most 24 chars")
    try:
        net = ipaddress.IPv4Network(spec.network_cidr, strict=True)
    except ValueError as exc:
        problems.append(f"network_cidr {spec.network_cidr!r}: {exc}")
        net = None
    if net is not None and not 16 <= net.prefixlen <= 29:
        problems.append(f"network_cidr {spec.network_cidr}: prefix must be /16../29")
    if not spec.hosts:
        problems.append("no hosts")
    if not spec.netfile.is_file():
        problems.append(f"netfile {spec.netfile} does not exist")
    if spec.opensm_config is not None and not spec.opensm_config.is_file():
        problems.append(f"opensm_config {spec.opensm_config} does not exist")
    if not 1 <= spec.sm_sweep_interval <= 3600:
        problems.append("sm_sweep_interval must be 1..3600 seconds")
    if spec.sm_sim_host is not None:
        if not _SIM_HOST.match(spec.sm_sim_host):
            problems.append(f"sm_sim_host {spec.sm_sim_host!r} must be 1..31 chars without \", #, @")
        if spec.sm_hosts:
            problems.append("sm_sim_host is for a lab without a subnet-manager host")

    reserved: set[ipaddress.IPv4Address] = set()
    if net is not None:
        reserved = {net.network_address + 1, net.broadcast_address - 1}
    seen_names: set[str] = set()
    seen_addr: set[ipaddress.IPv4Address] = set()
    seen_sim: set[str] = set()
    for h in spec.hosts:
        if not _HOST_NAME.match(h.name):
            problems.append(f"host name {h.name!r} is not a valid lowercase hostname")
        if h.name in seen_names:
            problems.append(f"host name {h.name!r} used twice")
        seen_names.add(h.name)
        if not _ROLE.match(h.role):
            problems.append(f"host {h.name}: role {h.role!r} is not [a-z][a-z0-9-]")
        try:
            addr = ipaddress.IPv4Address(h.address)
        except ValueError:
            problems.append(f"host {h.name}: address {h.address!r} is not IPv4")
            continue
        if net is not None:
            if addr not in net or addr in (net.network_address, net.broadcast_address):
                problems.append(f"host {h.name}: {addr} is not a host address of {net}")
            elif addr in reserved:
                problems.append(
                    f"host {h.name}: {addr} is reserved (gateway {net.network_address + 1}, "
                    f"simulator {net.broadcast_address - 1})"
                )
        if addr in seen_addr:
            problems.append(f"host {h.name}: address {addr} used twice")
        seen_addr.add(addr)
        devices: set[str] = set()
        for hca in h.hcas:
            if not _DEVICE.match(hca.device):
                problems.append(f"host {h.name}: device {hca.device!r} is not [A-Za-z0-9_]")
            if hca.device in devices:
                problems.append(f"host {h.name}: device {hca.device} declared twice")
            devices.add(hca.device)
            if not _SIM_HOST.match(hca.sim_host):
                problems.append(
                    f"host {h.name}: sim_host {hca.sim_host!r} must be 1..31 chars "
                    'without ", #, @ or control characters'
                )
            if hca.sim_host in seen_sim:
                problems.append(f"sim_host {hca.sim_host!r} is used by two HCAs")
            seen_sim.add(hca.sim_host)
        if h.role == SM_ROLE and not h.hcas:
            problems.append(f"host {h.name}: subnet-manager host needs an HCA")
    if problems:
        raise LabSpecError(problems)
