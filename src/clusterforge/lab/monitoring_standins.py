"""LAB-ONLY hardware stand-ins for monitoring: the HCA counters node_exporter reads and dcgm-exporter's
GPU metrics, as files the lab machine writes and each container reads.

Every lab container gets its own directory of the lab state, `<state>/hosts/<host>/cf-lab`, bind-mounted
read-only at `LAB_DIR` (/var/lib/cf-lab). Inside it:

* `SYSFS_ROOT` (/var/lib/cf-lab/sysfs): a `class/infiniband/<hca>/ports/<n>/...` tree
  (`clusterforge.sim.ib_sysfs`); the lab's OFED stand-in package points the real node_exporter at it
  (a systemd drop-in adding `--path.sysfs`), so the rendered prod files are used as they are;
* `DCGM_FILE` (/var/lib/cf-lab/dcgm/metrics.prom): the Prometheus text dcgm-exporter would serve
  (`clusterforge.sim.dcgm_textfile`, with the nvidia-smi stand-in's GPU UUIDs); the lab's dcgm-exporter
  stand-in package serves it over HTTP on dcgm-exporter's port as `/metrics`.

`lab up` writes the healthy initial files (`write_initial`); a lab fault changes them in place on the lab
machine (`sysfs_root(state_dir, host)`, `dcgm_file(state_dir, host)`: the host side of those two paths),
and the containers see the change at once (a bind mount; every file written atomically).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from clusterforge.sim import dcgm_textfile, ib_sysfs
from clusterforge.util.fsutil import write_atomic

LAB_DIR = "/var/lib/cf-lab"
"""Where each container sees its stand-in files (read-only)."""
SYSFS_ROOT = f"{LAB_DIR}/sysfs"
"""node_exporter's `--path.sysfs` in the lab (the OFED stand-in's drop-in)."""
DCGM_FILE = f"{LAB_DIR}/dcgm/metrics.prom"
"""What the dcgm-exporter stand-in serves as /metrics."""
HOST_SUBDIR = "cf-lab"
"""The host side: `<state_dir>/hosts/<host>/cf-lab`."""


@dataclass(frozen=True)
class MonitoredHost:
    """What the stand-ins need of one lab host (plain data: the lab package knows no inventory)."""

    name: str
    ports: tuple[tuple[str, int, str], ...] = ()
    """(HCA device, port number, rate name such as `NDR`) of every InfiniBand port."""
    gpu_model: str = ""
    gpus: int = 0


def host_dir(state_dir: Path, host: str) -> Path:
    """The lab-machine directory mounted at LAB_DIR in `host`'s container."""
    return state_dir / "hosts" / host / HOST_SUBDIR


def _inside(state_dir: Path, host: str, path: str) -> Path:
    return host_dir(state_dir, host) / PurePosixPath(path).relative_to(LAB_DIR)


def sysfs_root(state_dir: Path, host: str) -> Path:
    """The lab-machine side of SYSFS_ROOT for `host` (what `ib_sysfs.write_tree` takes as root)."""
    return _inside(state_dir, host, SYSFS_ROOT)


def dcgm_file(state_dir: Path, host: str) -> Path:
    """The lab-machine side of DCGM_FILE for `host`."""
    return _inside(state_dir, host, DCGM_FILE)


def write_dcgm(state_dir: Path, host: MonitoredHost, gpus: Sequence[dcgm_textfile.GpuState]) -> Path:
    """Write (atomically) the DCGM exposition of `gpus` for `host`; returns the lab-machine path."""
    path = dcgm_file(state_dir, host.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, dcgm_textfile.exposition(host.name, host.gpu_model, list(gpus)))
    return path


def write_initial(state_dir: Path, hosts: Sequence[MonitoredHost]) -> None:
    """A healthy start for every host: every port LinkUp at its rate with zero counters, every GPU at rest.
    The directory exists for every host (the container mounts it) even without HCAs or GPUs. What exists
    already (a lab up that kept a running lab, with its faults) is left as it is."""
    for h in hosts:
        d = host_dir(state_dir, h.name)
        d.mkdir(parents=True, exist_ok=True)
        d.chmod(0o755)
        root = sysfs_root(state_dir, h.name)
        ib = root / "class" / "infiniband"
        if not ib.is_dir():  # a lab up that keeps a running lab keeps its faults too
            ib.mkdir(parents=True)
            ib_sysfs.write_tree(root, [ib_sysfs.SysfsPort(dev, port, rate) for dev, port, rate in h.ports])
        if h.gpus and not dcgm_file(state_dir, h.name).is_file():
            write_dcgm(state_dir, h, dcgm_textfile.gpus_of(h.name, h.gpus))
