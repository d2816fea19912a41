"""The lab's LAB-ONLY stand-ins, installed by `lab up` into its containers (rehearsal/env.py's bring_up):
`nvidia-smi` on every host with declared GPUs (answers from the model, clusterforge.sim), `mlxfwmanager`/
`mlxfwreset` on every host with a pinned card and the in-band `flint` on the fabric node (lab/firmware_standin.py),
and the monitoring stand-ins' initial sysfs tree and DCGM metrics (lab/monitoring_standins.py)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..check.checked import Checked
from ..collect.plan import sm_node
from ..collect.tools import argv
from ..lab import LabState
from ..lab import firmware_standin as fw_standin
from ..lab.monitoring_standins import MonitoredHost, write_initial
from ..model.index import Index
from ..sim import nvidia_smi
from .hostfile import put_file

STANDIN_DIR = "/usr/local/lib/clusterforge-lab/nvidia-smi"
DRIVER_MARK = "@CF_LAB_DRIVER@"
"""Where query-gpu.txt's driver_version goes: the stand-in fills in the installed driver's version."""
STANDIN = f"""#!/bin/sh
# LAB-ONLY STAND-IN for nvidia-smi, installed by `clusterforge lab up`. This is not NVIDIA
# software: there are no GPUs in the lab. It prints output in nvidia-smi's format derived
# from this node's declared hardware, so that collect -> parse -> validate can run end to end.
# The driver version is the installed driver package's (a container loads no kernel module: the
# deploy finds none loaded, so the module "loads on first use", which is now), under Debian's,
# Ubuntu's or EL's name; before any is installed, the inventory's pin as `lab up` saw it.
d={STANDIN_DIR}
driver() {{
  v=$(dpkg-query -W -f='${{db:Status-Abbrev}} ${{Version}}\\n' 'nvidia-driver-[0-9]*' nvidia-open 2>/dev/null \
      | sed -n 's/^[ih]i  *//p' | head -n 1)
  [ -n "$v" ] || v=$(rpm -q --qf '%{{VERSION}}\\n' nvidia-open 2>/dev/null | grep -v ' ' | head -n 1)
  [ -n "$v" ] || v=$(cat "$d/driver.txt" 2>/dev/null)
  printf '%s' "${{v%%-*}}"
}}
case "$1" in
  topo) exec cat "$d/topo.txt" ;;
  nvlink) exec cat "$d/nvlink.txt" ;;
  --query-gpu=*) v=$(driver); sed "s/{DRIVER_MARK}/${{v:-[N\\/A]}}/g" "$d/query-gpu.txt" ;;
  *) echo "clusterforge lab nvidia-smi stand-in: unsupported arguments: $*" >&2; exit 2 ;;
esac
"""


def write_monitoring_standins(state: LabState, checked: Checked) -> None:
    """The initial LAB-ONLY sysfs tree and DCGM metrics of every lab container (lab.monitoring_standins):
    its HCAs' ports (names from the lab, rates from the inventory), its declared GPUs."""
    index = checked.index
    hosts = []
    for name, rec in sorted(state.hosts.items()):
        hw = index.hardware.get(name)
        rates = {(h.name, p.port): p.rate for h in (hw.hcas if hw else []) for p in h.ports}
        ports = tuple((dev, port, rate) for dev, _ in rec.hcas
                      for (hca, port), rate in sorted(rates.items()) if hca == dev)
        gpus = hw.gpus if hw is not None and hw.gpus is not None else None
        hosts.append(MonitoredHost(name, ports, gpus.model if gpus else "", gpus.count if gpus else 0))
    write_initial(state.state_dir, hosts)


def install_gpu_standins(state: LabState, checked: Checked) -> int:
    """Install the lab-only nvidia-smi stand-in on every lab host with declared GPUs."""
    index = checked.index
    fields = argv("nvidia-smi-query-gpu")[1].split("=", 1)[1].split(",")
    todo = [n for n in sorted(state.hosts)
            if (hw := index.hardware.get(n)) is not None and hw.gpus is not None and hw.gpus.count]

    def install(name: str) -> None:
        hw = index.hardware[name]
        texts = {
            "topo.txt": nvidia_smi.topo_m(hw, index.cat),
            "nvlink.txt": nvidia_smi.nvlink_status(name, hw, index.cat),
            "query-gpu.txt": nvidia_smi.query_gpu(name, hw, index.cat, fields, DRIVER_MARK),
            "driver.txt": index.inv.software.nvidia_driver or "",
        }
        for fname, text in texts.items():
            put_file(state, name, f"{STANDIN_DIR}/{fname}", text)
        put_file(state, name, "/usr/local/bin/nvidia-smi", STANDIN, mode="0755")

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(install, todo))
    done = len(todo)
    return done


def install_fw_standins(state: LabState, checked: Checked) -> int:
    """The LAB-ONLY mlxfwmanager/mlxfwreset stand-ins on every lab host with a pinned card (lab.firmware_standin),
    each card at its pin; none when the environment pins no firmware."""
    todo = {n: c for n in sorted(state.hosts) if (c := cards(checked.index, n))}

    def install(name: str) -> None:
        put_file(state, name, fw_standin.STATE, json.dumps(todo[name], indent=1))
        for tool in fw_standin.TOOLS:
            put_file(state, name, f"/usr/local/bin/{tool}", fw_standin.STANDIN, mode="0755")

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(install, todo))
    return len(todo) + _install_switch_standin(state, checked)


def _install_switch_standin(state: LabState, checked: Checked) -> int:
    """The LAB-ONLY in-band `flint` on the fabric node (where validate reads the fabric: the master SM node, else
    the first host with an HCA), each pinned switch at its pin; none when no switch is pinned."""
    pinned = switches(checked.index)
    master = sm_node(checked.index)
    node = master if master in state.hosts else next((n for n, rec in state.hosts.items() if rec.hcas), None)
    if not pinned or node is None:
        return 0
    put_file(state, node, fw_standin.SWITCH_STATE, json.dumps(pinned, indent=1))
    put_file(state, node, "/usr/local/bin/flint", fw_standin.SWITCH_STANDIN, mode="0755")
    return 1


def switches(index: Index) -> dict[str, dict[str, Any]]:
    """The pinned switches as the flint stand-in starts them (by node description, which in the lab is the
    switch's name): each at its pin's version and first PSID, its device type the catalog family."""
    fw = index.inv.firmware
    pins = {p.model: p for p in fw.switches} if fw is not None else {}
    out: dict[str, dict[str, Any]] = {}
    for sw in index.inv.switches:
        pin, info = pins.get(sw.model), index.cat.switches.get(sw.model)
        if pin is None or info is None:
            continue
        out[sw.name] = {"model": sw.model, "device_type": info.family, "psid": pin.psids[0] if pin.psids
                        else fw_standin.DEFAULT_PSID, "fw": pin.version, "fw_running": pin.version}
    return out


def cards(index: Index, host: str) -> list[dict[str, Any]]:
    """The host's pinned cards as the stand-in starts them: each at its pin's version and first PSID, one
    PCI address a card (no Base GUID: validate matches them to the declared cards by device type). None when
    nothing on the host is pinned."""
    fw = index.inv.firmware
    pins = {p.model: p for p in fw.hcas} if fw is not None else {}
    hw = index.hardware.get(host)
    out: list[dict[str, Any]] = []
    if hw is None:
        return out
    for i, (name, model) in enumerate([(h.name, h.model) for h in hw.hcas] + [(d.name, d.model) for d in hw.dpus]):
        pin, info = pins.get(model), index.cat.hcas.get(model)
        if pin is None or info is None or not info.fw_device_type:
            continue
        out.append({"name": name, "device_type": info.fw_device_type, "psid": pin.psids[0] if pin.psids
                    else fw_standin.DEFAULT_PSID, "pci": f"0000:{0x3b + i:02x}:00.0", "fw": pin.version,
                    "fw_running": pin.version})
    return out
