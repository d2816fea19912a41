"""The local lab for an inventory environment: the bridge between the model and `clusterforge.lab`.

The lab package is stdlib-only and knows nothing of the inventory; this module maps an
environment onto it: one container per node at its management address, each HCA a view of
the rendered ibsim net file, the lab's state under `.lab/<env>/`, inventory cable ids to
simulator ports for fault injection, and lab SSH settings for collection.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .api import Checked
from .collect.plan import HOST_TOOLS, Target, default_targets
from .collect.ssh import SshConfig
from .lab import LabHca, LabHost, LabSpec, LabState, PortRef, read_state, ssh_command
from .lab.errors import LabError
from .lab.netfile import parse_netfile
from .lab.proc import run
from .model.index import Index
from .render import render, write_tree
from .sim import nvidia_smi

LAB_ROOT = Path(os.environ.get("CLUSTERFORGE_LAB_ROOT", ".lab"))
SM_ETC = "/etc/opensm"


@dataclass(frozen=True)
class LabPaths:
    env_name: str
    state_dir: Path
    render_dir: Path

    @property
    def netfile(self) -> Path:
        return self.render_dir / "fabric" / "ibsim.net"


def paths(env: Path, root: Path | None = None) -> LabPaths:
    root = root if root is not None else Path(os.environ.get("CLUSTERFORGE_LAB_ROOT", LAB_ROOT))
    name = env.resolve().name
    return LabPaths(name, root / name / "state", root / name / "render")


def lab_name(env_name: str) -> str:
    return f"cf-{env_name}"[:24]


def prepare(checked: Checked, env: Path, root: Path | None = None) -> tuple[LabSpec, LabPaths]:
    """Render the environment into the lab's folder and describe the lab to start."""
    p = paths(env, root)
    write_tree(p.render_dir, render(checked.index, p.env_name).files)
    plan = checked.index.inv.addressing.management
    if plan is None:
        raise LabError("the lab needs addressing.management: the containers sit on that subnet")
    spec = lab_spec(checked.index, name=lab_name(p.env_name), cidr=str(plan.cidr), state_dir=p.state_dir,
                    netfile=p.netfile)
    return spec, p


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
    hosts = []
    for node in index.inv.nodes:
        if wanted is not None and node.name not in wanted:
            continue
        ip = addrs.mgmt.get(node.name)
        if ip is None:
            raise LabError(f"{node.name} has no management address")
        hcas = tuple(
            LabHca(h.name, sim_id[f"{node.name} {h.name}"])
            for h in index.hardware[node.name].hcas
            if f"{node.name} {h.name}" in sim_id
        )
        address = str(net.network_address + (ip - base))
        hosts.append(LabHost(node.name, address, hcas, node.role))
    return LabSpec(name=name, network_cidr=cidr, hosts=tuple(hosts), netfile=netfile, state_dir=state_dir,
                   start_sm=start_sm)


def running(env: Path, root: Path | None = None) -> LabState | None:
    """The lab state of this environment when its lab has been brought up, else None."""
    p = paths(env, root)
    try:
        state = read_state(p.state_dir)
    except (LabError, OSError, ValueError):
        return None
    return state if state is not None and state.complete else None


def put_file(state: LabState, host: str, path: str, text: str, mode: str = "0644", timeout_s: float = 60) -> None:
    """Write `text` to `path` on a lab host atomically (temp file + rename), over the lab's SSH.
    A failure is a LabError (lab.proc's CommandError, with the stderr tail), as every lab command's."""
    script = 'mkdir -p "$(dirname "$1")" && cat > "$1.tmp" && chmod "$2" "$1.tmp" && mv "$1.tmp" "$1"'
    run(ssh_command(state, host, ["sh", "-c", script, "put", path, mode]), timeout=timeout_s, input_text=text)


def start_subnet_manager(state: LabState, p: LabPaths, sm_node: str, timeout_s: float = 60) -> None:
    """Push the rendered OpenSM files to the SM container and start OpenSM there (idempotent)."""
    for f in sorted((p.render_dir / "opensm" / sm_node).iterdir()):
        put_file(state, sm_node, f"{SM_ETC}/{f.name}", f.read_text(encoding="utf-8"))
    probe = run(ssh_command(state, sm_node, ["pgrep", "-x", "opensm"]), timeout=timeout_s, check=False)
    if probe.returncode == 0:
        return
    run(ssh_command(state, sm_node, ["opensm", "-B", "-F", f"{SM_ETC}/opensm.conf", "-f", "/var/log/opensm.log"]),
        timeout=timeout_s)


STANDIN_DIR = "/usr/local/lib/clusterforge-lab/nvidia-smi"
STANDIN = f"""#!/bin/sh
# LAB-ONLY STAND-IN for nvidia-smi, installed by `clusterforge lab up`. This is not NVIDIA
# software: there are no GPUs in the lab. It prints output in nvidia-smi's format derived
# from this node's declared hardware, so that collect -> parse -> validate can run end to end.
d={STANDIN_DIR}
case "$1" in
  topo) exec cat "$d/topo.txt" ;;
  nvlink) exec cat "$d/nvlink.txt" ;;
  --query-gpu=*) exec cat "$d/query-gpu.txt" ;;
  *) echo "clusterforge lab nvidia-smi stand-in: unsupported arguments: $*" >&2; exit 2 ;;
esac
"""


def install_gpu_standins(state: LabState, checked: Checked) -> int:
    """Install the lab-only nvidia-smi stand-in on every lab host with declared GPUs."""
    index = checked.index
    fields = HOST_TOOLS["nvidia-smi-query-gpu"][1].split("=", 1)[1].split(",")
    todo = [n for n in sorted(state.hosts)
            if (hw := index.hardware.get(n)) is not None and hw.gpus is not None and hw.gpus.count]

    def install(name: str) -> None:
        hw = index.hardware[name]
        texts = {
            "topo.txt": nvidia_smi.topo_m(hw, index.cat),
            "nvlink.txt": nvidia_smi.nvlink_status(name, hw, index.cat),
            "query-gpu.txt": nvidia_smi.query_gpu(name, hw, index.cat, fields, index.inv.software.nvidia_driver),
        }
        for fname, text in texts.items():
            put_file(state, name, f"{STANDIN_DIR}/{fname}", text)
        put_file(state, name, "/usr/local/bin/nvidia-smi", STANDIN, mode="0755")

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(install, todo))
    done = len(todo)
    return done


def collect_config(state: LabState) -> SshConfig:
    return SshConfig(known_hosts=state.known_hosts, identity=state.ssh_key, user="root", parallel=8)


def collect_targets(state: LabState, checked: Checked) -> tuple[list[Target], Target | None]:
    addresses = {name: rec.address for name, rec in state.hosts.items()}
    return default_targets(checked.index, addresses)


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

