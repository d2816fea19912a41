"""Monitoring faults in the lab: HCA error counters rising, a GPU's HBM hot, its ECC count growing.

There is no hardware in the lab containers: node_exporter reads a stand-in sysfs tree and a
dcgm-exporter stand-in serves a DCGM-named text file (`monitoring_standins`: files on the lab
machine, bind-mounted read-only into each container at /var/lib/cf-lab). A fault changes those
values so that the real node_exporter, vmagent, VictoriaMetrics, vmalert and Alertmanager see it
as they would see the hardware. "Rising" needs something that keeps writing: a small driver
process on the lab machine (`fault_driver.py`) rewrites each faulted value once a second from
wall time (value = start + rate x elapsed). Every applied fault is journaled in
`<state>/monitoring-faults.json` (atomic rewrite; the driver reads it every tick), so `lab status`
shows it and any process can `heal`: stop the driver, write every original value back.

Stdlib only, like the rest of the lab package; the inventory side (cable id -> HCA ports,
host -> GPUs) is `clusterforge.rehearsal.faults`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterforge.lab import fault_driver
from clusterforge.lab.errors import FaultError
from clusterforge.lab.monitoring_standins import dcgm_file, sysfs_root
from clusterforge.lab.proc import ProcessRecord, is_alive, spawn_daemon, stop_process
from clusterforge.lab.state import LabState, state_path

JOURNAL = "monitoring-faults.json"
DRIVER_LOG = "fault-driver.log"
ERROR_COUNTERS = ("symbol_error", "port_rcv_errors")
"""What `errors` raises on an HCA port: node_exporter's node_infiniband_symbol_error_total and
node_infiniband_port_errors_received_total."""
HBM_TEMP = "DCGM_FI_DEV_MEMORY_TEMP"
ECC_SBE = "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"
KINDS = ("errors", "hot", "ecc")


@dataclass(frozen=True)
class Value:
    """One stand-in value a fault drives on one host."""

    host: str
    what: str  # ("counter", device, port, name) flattened: "mlx5_0/1 symbol_error" | "gpu 0 DCGM_FI_..."
    kind: str  # "counter" (a sysfs counter file) | "prom" (one sample line of the DCGM stand-in)
    per_s: float = 0.0
    set: float | None = None
    device: str = ""
    port: int = 0
    counter: str = ""
    metric: str = ""
    gpu: int = 0
    integer: bool = False  # a counter: written as a whole number

    def path(self, state_dir: Path) -> Path:
        if self.kind == "counter":
            return (sysfs_root(state_dir, self.host) / "class" / "infiniband" / self.device / "ports"
                    / str(self.port) / "counters" / self.counter)
        return dcgm_file(state_dir, self.host)


@dataclass(frozen=True)
class MonitorFault:
    kind: str  # errors | hot | ecc
    target: str  # the cable id, or "HOST GPU"
    values: tuple[Value, ...]
    params: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what is not simulated (a switch end of the cable)

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(sorted({v.host for v in self.values}))

    def describe(self) -> str:
        params = ", ".join(f"{k} {v:g}" for k, v in self.params.items())
        return f"{self.kind} {self.target}" + (f" ({params})" if params else "")


def errors_fault(cable: str, ports: Iterable[tuple[str, str, int]], rate_per_h: float,
                 notes: Iterable[str] = ()) -> MonitorFault:
    """Symbol and receive errors rising at `rate_per_h` on each (host, device, port) end of `cable`."""
    values = tuple(Value(host, f"{dev}/{port} {c}", "counter", per_s=rate_per_h / 3600.0, device=dev, port=port,
                         counter=c)
                   for host, dev, port in ports for c in ERROR_COUNTERS)
    return MonitorFault("errors", cable, values, {"rate_per_h": rate_per_h}, tuple(notes))


def hot_fault(host: str, gpu: int, temp_c: float) -> MonitorFault:
    """GPU `gpu`'s HBM temperature held at `temp_c`."""
    value = Value(host, f"GPU {gpu} {HBM_TEMP}", "prom", set=temp_c, metric=HBM_TEMP, gpu=gpu)
    return MonitorFault("hot", f"{host} {gpu}", (value,), {"temp_c": temp_c})


def ecc_fault(host: str, gpu: int, per_day: float) -> MonitorFault:
    """GPU `gpu`'s corrected (single-bit) ECC counter growing by `per_day` a day."""
    value = Value(host, f"GPU {gpu} {ECC_SBE}", "prom", per_s=per_day / 86400.0, metric=ECC_SBE, gpu=gpu,
                  integer=True)
    return MonitorFault("ecc", f"{host} {gpu}", (value,), {"per_day": per_day})


# -- the journal: what holds now, and the driver that keeps it moving --

def journal_path(state_dir: Path) -> Path:
    return state_dir / JOURNAL


def journal(state_dir: Path) -> dict[str, Any]:
    """{"driver": process record or None, "faults": [{kind, target, hosts, params, notes, at, entries}]}."""
    path = journal_path(state_dir)
    try:
        data = fault_driver.load(path)
    except (OSError, ValueError) as exc:
        raise FaultError(f"{path}: unreadable monitoring fault journal: {exc}") from None
    data.setdefault("faults", [])
    return data


def faults(state_dir: Path) -> list[dict[str, Any]]:
    """The monitoring faults that hold (for `lab status`)."""
    return [{k: f[k] for k in ("kind", "target", "hosts", "params", "notes", "at") if k in f}
            for f in journal(state_dir)["faults"]]


def _write_journal(state_dir: Path, data: dict[str, Any]) -> None:
    from clusterforge.util.fsutil import write_atomic

    write_atomic(journal_path(state_dir), json.dumps(data, indent=1, sort_keys=True) + "\n")


def _driver(data: dict[str, Any]) -> ProcessRecord | None:
    rec = data.get("driver")
    try:
        return ProcessRecord.from_json(rec) if isinstance(rec, dict) else None
    except ValueError:
        return None


def _entry(state: LabState, v: Value, now: float, previous: list[dict[str, Any]]) -> dict[str, Any]:
    entry: dict[str, Any] = {"host": v.host, "what": v.what, "kind": v.kind, "path": str(v.path(state.state_dir)),
                             "per_s": v.per_s, "set": v.set, "t0": now}
    if v.kind == "prom":
        entry.update(metric=v.metric, gpu=str(v.gpu), integer=v.integer)
    same = [e for e in previous if (e["path"], e.get("metric"), e.get("gpu"))
            == (entry["path"], entry.get("metric"), entry.get("gpu"))]
    if same:  # a second fault on the same value: it continues from where it is; heal restores the first original
        entry["original"] = same[-1]["original"]
        entry["base"] = float(fault_driver.value_at(same[-1], now))
    else:
        try:
            entry["original"] = fault_driver.read_value(entry)
        except fault_driver.StandinMissing as exc:
            raise FaultError(f"{v.host}: the monitoring stand-in is not there ({exc}): bring the lab up again "
                             "(`clusterforge lab up`) to write it") from None
        entry["base"] = float(entry["original"])
    return entry


def _check_hosts(state: LabState, fault: MonitorFault) -> None:
    missing = [h for h in fault.hosts if h not in state.hosts]
    if missing:
        raise FaultError(f"{', '.join(missing)}: no container in this lab (start it: `lab up --limit`)")
    if not fault.values:
        raise FaultError(f"{fault.describe()}: nothing in the lab to change")


def inject(state: LabState, fault: MonitorFault) -> None:
    """Apply `fault` (journaled; every value read first, so a missing stand-in changes nothing) and make sure
    the driver runs."""
    _check_hosts(state, fault)
    with fault_driver.locked(journal_path(state.state_dir)):  # no driver tick from the journal before this one
        _inject(state, fault)


def _inject(state: LabState, fault: MonitorFault) -> None:
    data = journal(state.state_dir)
    previous = fault_driver.entries_of(data)
    now = time.time()
    entries = [_entry(state, v, now, previous) for v in fault.values]
    replaced = {(e["path"], e.get("metric"), e.get("gpu")) for e in entries}
    for f in data["faults"]:  # the newer fault drives a value both name
        f["entries"] = [e for e in f["entries"] if (e["path"], e.get("metric"), e.get("gpu")) not in replaced]
    data["faults"].append({"kind": fault.kind, "target": fault.target, "hosts": list(fault.hosts),
                           "params": fault.params, "notes": list(fault.notes), "at": now, "entries": entries})
    fault_driver.apply(entries, [fault_driver.value_at(e, now) for e in entries])  # at once, not a tick later
    rec = _driver(data)
    if rec is None or not is_alive(rec):
        _write_journal(state.state_dir, data)
        rec = spawn_daemon([sys.executable, fault_driver.__file__, "run", str(journal_path(state.state_dir)),
                            str(state_path(state.state_dir)), fault_driver.MARK],
                           name="fault-driver", env={"PATH": "/usr/bin:/bin"}, cwd=state.state_dir,
                           stdin=subprocess.DEVNULL, log=state.state_dir / DRIVER_LOG)
        data["driver"] = rec.to_json()
    _write_journal(state.state_dir, data)


def heal(state_dir: Path) -> int:
    """Stop every monitoring fault: the driver stops, each value goes back to what it was before the fault.
    Returns how many faults were healed."""
    data = journal(state_dir)
    rec = _driver(data)
    if rec is not None:
        stop_process(rec)
    with fault_driver.locked(journal_path(state_dir)):
        data = journal(state_dir)
        entries = fault_driver.entries_of(data)
        present = [e for e in entries if Path(e["path"]).parent.is_dir()]  # a lab brought down keeps nothing
        fault_driver.apply(present, [e["original"] for e in present])
        n = len(data["faults"])
        journal_path(state_dir).unlink(missing_ok=True)
    return n


def driver_running(state_dir: Path) -> bool:
    rec = _driver(journal(state_dir))
    return rec is not None and is_alive(rec)
