#!/usr/bin/python3
"""clusterforge lab guest wrapper: run an InfiniBand tool against the simulator.

Installed (by the lab, via a read-only bind mount) as /usr/local/sbin/ibwrap
with one symlink per tool (/usr/local/sbin/ibstat -> ibwrap, ...), which come
first in root's PATH.  Python 3 stdlib only: it runs inside the lab hosts.

* Each HCA of the host is one ibsim client view: umad2sim always calls it
  ``ibsim0``.  /etc/clusterforge-lab/ib.json maps the declared device names
  (mlx5_0, mlx5_1, ...) to ibsim SIM_HOST ids.  ``-C <device>`` (or ibstat's
  positional CA name) selects the HCA; without it the first one is used, and
  plain ``ibstat`` lists every declared device.
* ``ibstat`` output is rewritten: ``CA 'ibsim0'`` becomes the device name and
  the ``Rate:`` line is recomputed from the port's active width and speed
  (umad2sim 0.10 reports 26 Gb/s per lane for HDR, i.e. 104 for 4X HDR).
* ``opensm`` binds the port whose GUID it is given (``-g``/``--guid``, else the ``guid`` line of its
  ``-F`` config), as a real OpenSM does: the wrapper attaches it as the HCA with that port GUID
  (asked of the simulator with ``ibstat -p``), so one OpenSM per rail plane can run on a host,
  each as its HCA in that plane. GUID 0 (not known yet, as in the lab's rendered configuration): the
  HCA of rail plane ``$CLUSTERFORGE_LAB_OPENSM_PLANE`` (ib.json's ``plane``; set by the lab's
  opensm-plane@ drop-in), else the first HCA.
* Every tool but opensm runs with a timeout (clients wait forever when the
  simulator is gone): ib.json "timeout", or env CLUSTERFORGE_LAB_IB_TIMEOUT
  (0 = none).  Exit status 124 on timeout.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

CONF_PATH = "/etc/clusterforge-lab/ib.json"
REAL_DIRS = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")
SIM_CA = "ibsim0"
WRAPPER_DIR = "/usr/local/sbin"

#: libibumad clients: run with LD_PRELOAD=libumad2sim.so and a timeout.
CLIENT_TOOLS = (
    "ibstat", "ibnetdiscover", "iblinkinfo", "ibportstate", "ibaddr", "ibroute",
    "ibqueryerrors", "perfquery", "smpquery", "smpdump", "saquery", "sminfo", "ibping",
    "ibtracert", "ibsysstat", "ibccquery", "ibccconfig", "dump_fts", "osmtest",
)
#: long-running clients: exec'd directly, no timeout.
DAEMON_TOOLS = ("opensm",)
#: shell scripts that call $IBPATH/ibnetdiscover etc.: pointed at the wrappers.
SCRIPT_TOOLS = ("ibswitches", "ibhosts", "ibnodes", "ibrouters", "dump_lfts", "dump_mfts")
ALL_TOOLS = CLIENT_TOOLS + DAEMON_TOOLS + SCRIPT_TOOLS

_LANES = {"1X": 1, "2X": 2, "4X": 4, "8X": 8, "12X": 12}
_SPEED = {"2.5 Gbps": 2.5, "5.0 Gbps": 5.0, "10.0 Gbps": 10.0}
_EXT_SPEED = {"14.0625 Gbps": 14.0, "25.78125 Gbps": 25.0, "53.125 Gbps": 50.0,
              "106.25 Gbps": 100.0}


@dataclass(frozen=True)
class Device:
    name: str
    sim_host: str
    plane: int | None = None


@dataclass(frozen=True)
class Conf:
    server: str
    port: int
    devices: tuple[Device, ...]
    timeout: float


def load_conf(path: str | None = None) -> Conf:
    path = path or os.environ.get("CLUSTERFORGE_LAB_IB_CONF") or CONF_PATH
    with open(path) as f:
        data = json.load(f)
    devices = tuple(Device(str(d["name"]), str(d["sim_host"]), None if d.get("plane") is None else int(d["plane"]))
                    for d in data["devices"])
    timeout = float(os.environ.get("CLUSTERFORGE_LAB_IB_TIMEOUT", data.get("timeout", 60)))
    return Conf(str(data["server"]), int(data["port"]), devices, timeout)


def preload_path() -> str:
    found = sorted(glob.glob("/usr/lib/*/umad2sim/libumad2sim.so"))
    if not found:
        raise SystemExit("ibwrap: libumad2sim.so not found (package libumad2sim0)")
    return found[0]


def real_tool(tool: str) -> str:
    for d in REAL_DIRS:
        path = os.path.join(d, tool)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise SystemExit(f"ibwrap: {tool} is not installed")


def client_env(conf: Conf, device: Device) -> dict[str, str]:
    env = dict(os.environ)
    env["LD_PRELOAD"] = preload_path()
    env["IBSIM_SERVER_NAME"] = conf.server
    env["IBSIM_SERVER_PORT"] = str(conf.port)
    env["SIM_HOST"] = device.sim_host
    return env


def find_device(conf: Conf, name: str) -> Device | None:
    for d in conf.devices:
        if d.name == name or (name == SIM_CA and len(conf.devices) == 1):
            return d
    return None


def select_device(conf: Conf, args: list[str]) -> tuple[Device, list[str]]:
    """Pick the HCA from -C/--Ca (rewritten to ibsim0); default: the first one."""
    if not conf.devices:
        raise SystemExit("ibwrap: this host has no HCA in the lab")
    out: list[str] = []
    chosen = conf.devices[0]
    i = 0
    while i < len(args):
        a = args[i]
        value = None
        if a in ("-C", "--Ca") and i + 1 < len(args):
            value = args[i + 1]
            i += 2
        elif a.startswith("--Ca="):
            value = a.split("=", 1)[1]
            i += 1
        elif a.startswith("-C") and len(a) > 2:
            value = a[2:]
            i += 1
        else:
            out.append(a)
            i += 1
            continue
        dev = find_device(conf, value)
        if dev is None:
            names = ", ".join(d.name for d in conf.devices)
            raise SystemExit(f"ibwrap: unknown CA {value!r} (this host has: {names})")
        chosen = dev
        out += ["-C", SIM_CA]
    return chosen, out


def scratch_cwd(force: bool) -> tuple[str, str | None]:
    """umad2sim writes ./sys-<pid>: keep cwd if writable, else a private temp dir."""
    cwd = os.getcwd()
    if not force and os.access(cwd, os.W_OK):
        return cwd, None
    tmp = tempfile.mkdtemp(prefix="ibwrap-")
    return tmp, tmp


def run_client(argv: list[str], env: dict[str, str], timeout: float,
               capture: bool) -> subprocess.CompletedProcess[str]:
    cwd, tmp = scratch_cwd(force=False)
    proc = subprocess.Popen(argv, env=env, cwd=cwd, text=True,
                            stdout=subprocess.PIPE if capture else None)
    try:
        out, _ = proc.communicate(timeout=timeout if timeout > 0 else None)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        sys.stderr.write(f"ibwrap: {os.path.basename(argv[0])} timed out after {timeout:g}s "
                         "(is the simulator running?)\n")
        rc = 124
    finally:
        shutil.rmtree(os.path.join(cwd, f"sys-{proc.pid}"), ignore_errors=True)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return subprocess.CompletedProcess(argv, rc, out or "", "")


# -- ibstat ------------------------------------------------------------------------


def format_rate(gbps: float) -> str:
    return str(int(gbps)) if gbps == int(gbps) else f"{gbps:g}"


def rate_from_portinfo(text: str) -> str | None:
    """Rate (Gb/s, as ibstat prints it) from ``smpquery portinfo`` output."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"^(\w+):\.*(.*)$", line.strip())
        if m:
            fields[m.group(1)] = m.group(2).strip()
    lanes = _LANES.get(fields.get("LinkWidthActive", ""))
    if lanes is None:
        return None
    lane = _EXT_SPEED.get(fields.get("LinkSpeedExtActive", ""))
    if lane is None:
        lane = _SPEED.get(fields.get("LinkSpeedActive", ""))
    if lane is None:
        return None
    return format_rate(lanes * lane)


def rewrite_ibstat(text: str, device: str, rates: dict[int, str]) -> str:
    """Rename ibsim0 to the device and put the true rate on each port."""
    out = []
    port = 0
    for line in text.splitlines():
        if line.startswith(f"CA '{SIM_CA}'"):
            line = f"CA '{device}'" + line[len(f"CA '{SIM_CA}'"):]
        m = re.match(r"^\s+Port (\d+):", line)
        if m:
            port = int(m.group(1))
        m = re.match(r"^(\s+Rate: )(\S+)$", line)
        if m and port in rates:
            line = m.group(1) + rates[port]
        out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def ibstat(conf: Conf, args: list[str]) -> int:
    real = real_tool("ibstat")
    flags = [a for a in args if a.startswith("-")]
    positional = [a for a in args if not a.startswith("-")]
    if "-l" in flags or "--list_of_cas" in flags:
        for d in conf.devices:
            print(d.name)
        return 0
    if any(f in flags for f in ("-h", "--help", "-V", "--version")):
        return subprocess.call([real, *args])
    if positional:
        dev = find_device(conf, positional[0])
        if dev is None:
            sys.stderr.write(f"ibstat: CA '{positional[0]}' not found\n")
            return 255
        devices: tuple[Device, ...] = (dev,)
        rest = [SIM_CA, *positional[1:]]
    else:
        devices = conf.devices
        rest = []
    short = "-s" in flags or "--short" in flags or "-p" in flags or "--port_list" in flags
    status = 0
    for dev in devices:
        env = client_env(conf, dev)
        res = run_client([real, *flags, *rest], env, conf.timeout, capture=True)
        if res.returncode != 0:
            sys.stdout.write(res.stdout)
            status = res.returncode
            continue
        rates: dict[int, str] = {}
        if not short:
            for pm in re.finditer(r"^\s+Port (\d+):", res.stdout, re.M):
                port = int(pm.group(1))
                q = run_client([real_tool("smpquery"), "-D", "portinfo", "0", str(port)],
                               env, conf.timeout, capture=True)
                rate = rate_from_portinfo(q.stdout) if q.returncode == 0 else None
                if rate is not None:
                    rates[port] = rate
        sys.stdout.write(rewrite_ibstat(res.stdout, dev.name, rates))
    return status


# -- opensm: the HCA of the bound port ----------------------------------------------


def opensm_guid(args: list[str]) -> int:
    """The port GUID OpenSM is told to bind (``-g``/``--guid``, else ``guid`` in its ``-F`` config); 0: none."""
    value = None
    config = None
    for i, a in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else None
        if a in ("-g", "--guid") and nxt is not None:
            value = nxt
        elif a.startswith("--guid="):
            value = a.split("=", 1)[1]
        elif a in ("-F", "--config") and nxt is not None:
            config = nxt
    if value is None and config is not None:
        try:
            with open(config) as f:
                for line in f:
                    parts = line.split("#", 1)[0].split()
                    if len(parts) == 2 and parts[0] == "guid":
                        value = parts[1]
        except OSError:
            return 0
    try:
        return int(value, 16) if value else 0
    except ValueError:
        return 0


def device_by_guid(conf: Conf, guid: int) -> Device | None:
    """The HCA one of whose ports has `guid` (``ibstat -p`` through the simulator), or None."""
    for dev in conf.devices:
        res = run_client([real_tool("ibstat"), "-p"], client_env(conf, dev), conf.timeout, capture=True)
        for word in res.stdout.split() if res.returncode == 0 else []:
            try:
                if int(word, 16) == guid:
                    return dev
            except ValueError:
                continue
    return None


def opensm_device(conf: Conf, args: list[str]) -> Device | None:
    """The HCA OpenSM attaches as: the one with its bound port GUID, else the one of its rail plane."""
    guid = opensm_guid(args)
    if guid:
        found = device_by_guid(conf, guid)
        if found is not None:
            return found
    plane = os.environ.get("CLUSTERFORGE_LAB_OPENSM_PLANE", "")
    return next((d for d in conf.devices if plane.isdigit() and d.plane == int(plane)), None)


# -- entry point -------------------------------------------------------------------


def main(argv: list[str]) -> int:
    tool = os.path.basename(argv[0])
    args = argv[1:]
    if tool == "ibwrap":
        if not args or args[0] in ("-h", "--help"):
            print(__doc__)
            print("wrapped tools: " + " ".join(ALL_TOOLS))
            return 0
        tool, args = os.path.basename(args[0]), args[1:]
    if tool in SCRIPT_TOOLS:
        env = dict(os.environ)
        env["IBPATH"] = WRAPPER_DIR
        env["PATH"] = WRAPPER_DIR + ":" + env.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        os.execve(real_tool(tool), [tool, *args], env)
    if tool not in CLIENT_TOOLS + DAEMON_TOOLS:
        raise SystemExit(f"ibwrap: {tool} is not a wrapped tool")
    conf = load_conf()
    if tool == "ibstat":
        return ibstat(conf, args)
    chosen = [a for a in args if a in ("-C", "--Ca") or a.startswith(("-C", "--Ca="))]
    device, args = select_device(conf, args)
    if tool == "opensm" and not chosen and len(conf.devices) > 1:
        device = opensm_device(conf, args) or device
    env = client_env(conf, device)
    real = real_tool(tool)
    if tool in DAEMON_TOOLS:
        env.setdefault("OSM_CACHE_DIR", "/var/cache/opensm")
        env.setdefault("OSM_TMP_DIR", env["OSM_CACHE_DIR"])
        os.makedirs(env["OSM_CACHE_DIR"], exist_ok=True)
        cwd, _ = scratch_cwd(force=True)
        os.chdir(cwd)
        os.execve(real, [tool, *args], env)
    return run_client([real, *args], env, conf.timeout, capture=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
