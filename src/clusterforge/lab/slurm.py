"""Real Slurm in the lab (podman mode): slurmctld on the subnet-manager container, slurmd on each compute
container, munge between them, all from Debian's packages in the lab image (docs/health.md).

`lab up` writes, into each Slurm host's guest directory (read-only at /etc/clusterforge-lab):

* `slurm.conf`: LAB ONLY, written here (a site keeps its own slurm.conf): the controller and each compute
  node by their lab addresses, no cgroups (containers), and the HealthCheck* lines of the environment's
  `health_check` exactly as the render writes them for a site to `Include`;
* `munge.key`: a fresh key for this lab (the image carries none of its own that counts);
* `slurm-start`: a constant script (no inventory value in it) that installs both where the daemons look and
  starts munged, then slurmctld (`controller`) or slurmd (`node`).

Then it waits until the controller sees every node respond. `scontrol` inside the lab is real: the lab
inventory's drain and resume hooks (`clusterforge lab drain|resume`) reach it from the lab machine
(`scontrol_argv`, run in the controller's container) and from inside a container (the guest stand-in runs
scontrol there itself). netns mode has no image to install Slurm in: `lab up --slurm` refuses it, starting
nothing.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from clusterforge.lab.errors import LabError
from clusterforge.lab.hosts import containers
from clusterforge.lab.state import LabState, write_state
from clusterforge.util.poll import wait_until

PACKAGES: tuple[str, ...] = ("munge", "slurmctld", "slurmd", "slurm-client")
CLUSTER = "cf-lab"
START = "slurm-start"

START_SCRIPT = """#!/bin/sh
# LAB ONLY (clusterforge lab up, lab/slurm.py): install the lab's slurm.conf and munge key and start
# munged, then slurmctld (controller) or slurmd (node). Constant: no inventory value is in this file.
set -eu
role="$1"
etc=/etc/clusterforge-lab
install -D -m 0644 "$etc/slurm.conf" /etc/slurm/slurm.conf
install -d -o munge -g munge -m 0700 /etc/munge
install -o munge -g munge -m 0400 "$etc/munge.key" /etc/munge/munge.key
install -d -o munge -g munge -m 0755 /run/munge
install -d -o slurm -g slurm /var/log/slurm /var/lib/slurm
case "$role" in
controller) daemon=slurmctld; install -d -o slurm -g slurm /var/lib/slurm/slurmctld ;;
node) daemon=slurmd; install -d /var/lib/slurm/slurmd ;;
*) echo "slurm-start: controller or node" >&2; exit 2 ;;
esac
if [ -d /run/systemd/system ]; then
    # systemd as PID 1 (lab up --systemd): the packages' own units, which own /run/munge (RuntimeDirectory)
    systemctl restart munge
    systemctl restart "$daemon"
else
    pkill -x munged || true
    runuser -u munge -- /usr/sbin/munged
    pkill -x "$daemon" || true
    "/usr/sbin/$daemon"
fi
"""


@dataclass(frozen=True)
class SlurmLab:
    """What the lab's Slurm is: the controller host, the compute hosts, the health check's slurm.conf lines."""

    controller: str
    nodes: tuple[str, ...]
    health: tuple[str, ...] = ()


def slurm_conf(lab: SlurmLab, addresses: dict[str, str]) -> str:
    """The lab's slurm.conf (Slurm 22.05, Debian 12). Pure."""
    missing = [h for h in (lab.controller, *lab.nodes) if h not in addresses]
    if missing:
        raise LabError(f"slurm: no lab address for {', '.join(missing)}")
    lines = [
        "# LAB ONLY: written by `clusterforge lab up` (lab/slurm.py); a site keeps its own slurm.conf and",
        "# Includes clusterforge's /etc/slurm/clusterforge-healthcheck.conf.",
        f"ClusterName={CLUSTER}",
        f"SlurmctldHost={lab.controller}({addresses[lab.controller]})",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        "SlurmUser=slurm",
        "SlurmdUser=root",
        "StateSaveLocation=/var/lib/slurm/slurmctld",
        "SlurmdSpoolDir=/var/lib/slurm/slurmd",
        "SlurmctldPidFile=/run/slurmctld.pid",
        "SlurmdPidFile=/run/slurmd.pid",
        "SlurmctldLogFile=/var/log/slurm/slurmctld.log",
        "SlurmdLogFile=/var/log/slurm/slurmd.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "MpiDefault=none",
        "ReturnToService=2",
        "SlurmdTimeout=120",
        # two job slots a node whatever the lab machine's cores (the job migration test runs two jobs on one
        # node): the configured CPUs count, not what slurmd finds (LAB ONLY)
        "SlurmdParameters=config_overrides",
        *lab.health,
    ]
    lines += [f"NodeName={n} NodeAddr={addresses[n]} CPUs=2 RealMemory=64 State=UNKNOWN" for n in lab.nodes]
    if lab.nodes:
        lines.append(f"PartitionName=lab Nodes={','.join(lab.nodes)} Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def write_files(lab: SlurmLab, addresses: dict[str, str], host_dirs: dict[str, Path]) -> None:
    """slurm.conf, a fresh munge key and the start script into each Slurm host's guest directory."""
    conf = slurm_conf(lab, addresses)
    key = secrets.token_bytes(1024)
    for host in (lab.controller, *lab.nodes):
        d = host_dirs[host]
        (d / "slurm.conf").write_text(conf, encoding="utf-8")
        fd = os.open(d / "munge.key", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o400)
        with os.fdopen(fd, "wb") as f:
            f.write(key)
        (d / START).write_text(START_SCRIPT, encoding="utf-8")
        (d / START).chmod(0o755)


def start_argv(role: str) -> list[str]:
    return ["/bin/sh", f"/etc/clusterforge-lab/{START}", role]


def start(lab: SlurmLab, state: LabState, timeout: float) -> None:
    """munged + slurmctld on the controller (recorded in the lab's state), then munged + slurmd on each node;
    wait until slurmctld sees them all."""
    ctl = state.hosts[lab.controller].container
    containers.exec_in(ctl, start_argv("controller"), timeout=60)
    state.slurm_controller = lab.controller
    write_state(state)
    for node in lab.nodes:
        containers.exec_in(state.hosts[node].container, start_argv("node"), timeout=60)
    wait_nodes_up(lambda: containers.exec_in(ctl, ["sinfo", "-h", "-N", "-o", "%N %T"], timeout=20).stdout,
                  lab.nodes, timeout=timeout)


def scontrol_argv(hosts: Sequence[str] | str, drain: bool, reason: str | None) -> list[str]:
    """`scontrol update` that drains (with a reason) or resumes `hosts` (a name or a Slurm hostlist)."""
    names = hosts if isinstance(hosts, str) else ",".join(hosts)
    if drain:
        return ["scontrol", "update", f"nodename={names}", "state=drain", f"reason={reason or 'cf-lab: drained'}"]
    return ["scontrol", "update", f"nodename={names}", "state=resume"]


def node_states(sinfo: str) -> dict[str, str]:
    """`sinfo -h -N -o '%N %T'` -> node -> state (idle, drained, down*, ...). Pure."""
    out: dict[str, str] = {}
    for line in sinfo.splitlines():
        parts = line.split()
        if len(parts) == 2:
            out[parts[0]] = parts[1]
    return out


def wait_nodes_up(query: Callable[[], str], nodes: Sequence[str], timeout: float = 90.0) -> None:
    """Poll `query()` (sinfo's text) until no node is unknown, down or not responding (`*`)."""
    def waiting() -> list[str]:
        try:
            last = node_states(query())
        except LabError as exc:
            last = {"(sinfo)": str(exc)[:200]}
        return [f"{n} {last.get(n, '?')}" for n in nodes
                if last.get(n, "unknown").rstrip("*") in ("unknown", "down", "") or last.get(n, "").endswith("*")]

    wait_until(waiting, timeout, 1.0, lambda left: LabError(
        f"slurm: {len(left)} node(s) not up {timeout:g}s after start (first: {left[0]}; see /var/log/slurm/ in "
        "its container)"))
