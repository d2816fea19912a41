"""The record of exactly what a lab started, kept in ``<state_dir>/lab.json``.

Written atomically (temp file + os.replace) after every step of ``up``, so
``down`` can stop precisely what exists even after a failed or interrupted
``up``.  Resource names are deterministic (derived from the lab name) and
recorded before the resource is created; removal tolerates missing pieces.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from clusterforge.lab.errors import LabError
from clusterforge.lab.fabric_tools import OpenSm
from clusterforge.lab.ibsim import IbSim
from clusterforge.lab.proc import ProcessRecord
from clusterforge.util.fsutil import write_atomic  # stdlib-only, like the lab

STATE_FILE = "lab.json"
STATE_VERSION = 1


@dataclass
class HostRecord:
    name: str
    address: str
    role: str
    hcas: list[tuple[str, str]]  # (device, sim_host)
    container: str = ""  # podman mode
    container_id: str = ""
    netns: str = ""  # netns mode
    veth: str = ""
    sshd: ProcessRecord | None = None
    shape: str = "debian12"
    image: str = ""  # podman mode: this host's image (its shape's)


@dataclass
class LabState:
    lab: str
    mode: str  # "podman" | "netns"
    state_dir: Path
    spec_digest: str
    network_cidr: str
    gateway: str
    ibsim_address: str
    netfile: Path
    image: str = ""
    network: str = ""
    bridge: str = ""
    netns: str = ""
    veth: str = ""
    ibsim: IbSim | None = None
    opensm_host: str = ""
    opensm: OpenSm | None = None  # host-side OpenSM (netns mode)
    slurm_controller: str = ""  # the host running slurmctld (podman mode, lab/slurm.py); "" = no Slurm
    hosts: dict[str, HostRecord] = field(default_factory=dict)
    complete: bool = False

    @property
    def ssh_key(self) -> Path:
        return self.state_dir / "keys" / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.state_dir / "keys" / "known_hosts"

    @property
    def faults_journal(self) -> Path:
        return self.state_dir / "faults.json"

    def to_json(self) -> dict[str, object]:
        return {
            "version": STATE_VERSION,
            "lab": self.lab,
            "mode": self.mode,
            "state_dir": str(self.state_dir),
            "spec_digest": self.spec_digest,
            "network_cidr": self.network_cidr,
            "gateway": self.gateway,
            "ibsim_address": self.ibsim_address,
            "netfile": str(self.netfile),
            "image": self.image,
            "network": self.network,
            "bridge": self.bridge,
            "netns": self.netns,
            "veth": self.veth,
            "ibsim": self.ibsim.to_json() if self.ibsim else None,
            "opensm_host": self.opensm_host,
            "opensm": self.opensm.to_json() if self.opensm else None,
            "slurm_controller": self.slurm_controller,
            "hosts": {
                name: {
                    "name": h.name, "address": h.address, "role": h.role,
                    "hcas": [list(x) for x in h.hcas],
                    "container": h.container, "container_id": h.container_id,
                    "netns": h.netns, "veth": h.veth,
                    "sshd": h.sshd.to_json() if h.sshd else None,
                    "shape": h.shape, "image": h.image,
                }
                for name, h in self.hosts.items()
            },
            "complete": self.complete,
        }

    @staticmethod
    def from_json(data: dict[str, object]) -> LabState:
        if data.get("version") != STATE_VERSION:
            raise LabError(f"unsupported lab state version {data.get('version')!r}")
        hosts_raw = data.get("hosts") or {}
        if not isinstance(hosts_raw, dict):
            raise LabError("bad hosts in lab state")
        hosts = {
            str(name): HostRecord(
                str(h["name"]), str(h["address"]), str(h["role"]),
                [(str(d), str(s)) for d, s in h["hcas"]],
                str(h.get("container", "")), str(h.get("container_id", "")),
                str(h.get("netns", "")), str(h.get("veth", "")),
                ProcessRecord.from_json(h["sshd"]) if isinstance(h.get("sshd"), dict) else None,
                str(h.get("shape", "debian12")), str(h.get("image", "")),
            )
            for name, h in hosts_raw.items()
        }
        ibsim_raw = data.get("ibsim")
        opensm_raw = data.get("opensm")
        return LabState(
            lab=str(data["lab"]),
            mode=str(data["mode"]),
            state_dir=Path(str(data["state_dir"])),
            spec_digest=str(data["spec_digest"]),
            network_cidr=str(data["network_cidr"]),
            gateway=str(data["gateway"]),
            ibsim_address=str(data["ibsim_address"]),
            netfile=Path(str(data["netfile"])),
            image=str(data.get("image", "")),
            network=str(data.get("network", "")),
            bridge=str(data.get("bridge", "")),
            netns=str(data.get("netns", "")),
            veth=str(data.get("veth", "")),
            ibsim=IbSim.from_json(ibsim_raw) if isinstance(ibsim_raw, dict) else None,
            opensm_host=str(data.get("opensm_host", "")),
            opensm=OpenSm.from_json(opensm_raw) if isinstance(opensm_raw, dict) else None,
            slurm_controller=str(data.get("slurm_controller", "")),
            hosts=hosts,
            complete=bool(data.get("complete", False)),
        )


def state_path(state_dir: Path) -> Path:
    return state_dir / STATE_FILE


def write_state(state: LabState) -> None:
    write_atomic(state_path(state.state_dir), json.dumps(state.to_json(), indent=1, sort_keys=True))


def read_state(state_dir: Path) -> LabState | None:
    path = state_path(state_dir)
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise LabError(f"{path}: not a JSON object")
    return LabState.from_json(data)


def remove_state(state_dir: Path) -> None:
    path = state_path(state_dir)
    if path.exists():
        path.unlink()
