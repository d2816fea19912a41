"""A DCGM-named metrics stand-in: what dcgm-exporter would expose for a node's GPUs, as a textfile.

There are no GPUs in the lab. This writes, for each declared GPU, the `DCGM_FI_*` series the
monitoring rules read, in the Prometheus text format, into node_exporter's textfile collector
directory (`--collector.textfile.directory`), so the real node_exporter serves them and the
real store and rules see dcgm-exporter's names. Values are a healthy GPU's unless a lab fault
says otherwise (`hot`: HBM temperature; `ecc`: corrected-error counters). The labels are
dcgm-exporter's (`gpu`, `UUID`, `device`, `modelName`, `Hostname`); the UUIDs are the lab's
nvidia-smi stand-in's, so both stand-ins name the same GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..util.fsutil import write_atomic

TEXTFILE = "clusterforge-dcgm-standin.prom"

GAUGES = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ROW_REMAP_FAILURE")
COUNTERS = ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
            "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
            "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL")
HEALTHY = {"DCGM_FI_DEV_GPU_TEMP": 38.0, "DCGM_FI_DEV_MEMORY_TEMP": 45.0}


@dataclass
class GpuState:
    index: int
    uuid: str
    values: dict[str, float] = field(default_factory=dict)
    """Field -> value where it differs from a healthy GPU's (a fault's HBM temperature, ECC counts)."""


def exposition(host: str, model: str, gpus: list[GpuState]) -> str:
    """The Prometheus text dcgm-exporter would serve for these GPUs."""
    lines: list[str] = []
    for name in (*GAUGES, *COUNTERS):
        kind = "gauge" if name in GAUGES else "counter"
        lines.append(f"# HELP {name} clusterforge lab stand-in for dcgm-exporter's {name}.")
        lines.append(f"# TYPE {name} {kind}")
        for g in gpus:
            value = g.values.get(name, HEALTHY.get(name, 0.0))
            labels = (f'gpu="{g.index}",UUID="{g.uuid}",device="nvidia{g.index}",modelName="{model}",'
                      f'Hostname="{host}"')
            lines.append(f"{name}{{{labels}}} {value:g}")
    return "\n".join(lines) + "\n"


def write_textfile(directory: Path, host: str, model: str, gpus: list[GpuState],
                   overrides: Mapping[int, Mapping[str, float]] | None = None) -> Path:
    """Write the stand-in file atomically (node_exporter never reads half a file); returns its path."""
    for g in gpus:
        g.values.update((overrides or {}).get(g.index, {}))
    path = directory / TEXTFILE
    write_atomic(path, exposition(host, model, gpus))
    return path


def gpus_of(host: str, count: int) -> list[GpuState]:
    """The node's GPUs, with the UUIDs the lab's nvidia-smi stand-in prints."""
    from .nvidia_smi import _uuid

    return [GpuState(i, _uuid(host, i)) for i in range(count)]
