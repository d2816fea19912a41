"""A local apt repository of LAB-ONLY stand-in packages with the real names and pinned versions.

NVIDIA, DOCA/OFED and Lustre packages cannot be downloaded here, so the lab gets empty
look-alikes: same package names, the inventory's pinned versions (plus optional older
versions to exercise upgrades), a description and a /usr/share/doc file that say what they
are, and the few commands the deploy verifies with (`ofed_info -s`). Repository setup,
pinning, install, upgrade, hold and the reboot logic run against them for real.

    build_repo(out_dir, pins, kernels=["6.1.0-18-amd64"], suite="lab")

Needs `dpkg-deb` and `dpkg-scanpackages` (dpkg-dev) and `apt-ftparchive` (apt-utils).
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..deploy.packages import (
    DCGM_EXPORTER_PACKAGE,
    LEMUR_AGENT_PACKAGE,
    LEMUR_MOVERS_PACKAGE,
    TELEGRAF_PACKAGE,
    Pin,
    headers_package,
)
from ..lab.monitoring_standins import DCGM_FILE, SYSFS_ROOT
from . import standin_lnet

LABEL = "clusterforge LAB-ONLY stand-in"
TOOL_TIMEOUT_S = 120
_EPOCH = "1700000000"

_OFED_INFO = """#!/bin/sh
# LAB-ONLY stand-in for ofed_info (clusterforge): no OFED is installed on this host.
case "$1" in
  -s) echo "OFED-internal-{version}:" ;;
  -n) echo "{version}" ;;
  *) echo "OFED-internal-{version} (clusterforge lab-only stand-in)" ;;
esac
"""


def _control(name: str, version: str, description: str) -> str:
    return (f"Package: {name}\nVersion: {version}\nArchitecture: all\nMaintainer: clusterforge lab <lab@invalid>\n"
            f"Section: misc\nPriority: optional\n"
            f"Description: {LABEL} for {name} {version}\n {description}\n")


#: Bump when what the stand-ins ship changes (the lab's repository is rebuilt then).
STANDIN_RECIPE = 5


def _unit(description: str, service: str) -> str:
    return (f"[Unit]\nDescription={LABEL}: {description}\n\n[Service]\n{service}\n\n"
            "[Install]\nWantedBy=multi-user.target\n")


#: Units the real packages ship, so that a lab host with systemd enables and starts what the deploy
#: manages: a oneshot for openibd, an idle process for the daemons (they do nothing: no hardware here).
_ONESHOT = "Type=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true"
_IDLE = "Type=simple\nExecStart=/bin/sleep infinity"

#: mount(8) runs /sbin/mount.lustre for `Type=lustre`: the stand-in mounts an empty tmpfs there (the lab has no
#: Lustre servers; the MGS NIDs in the unit are never contacted) so the mount unit's mechanics (enable, order,
#: options, active) are exercised. A mount that fails says why.
_MOUNT_LUSTRE = """#!/bin/sh
# LAB-ONLY stand-in for mount.lustre (clusterforge): no Lustre client or server here. Mounts an empty,
# labelled tmpfs at the mount point instead of contacting the MGS ($1).
[ $# -ge 2 ] || { echo "mount.lustre (lab stand-in): usage: mount.lustre SPEC DIR [-o OPTIONS]" >&2; exit 1; }
mkdir -p "$2" && mount -t tmpfs -o size=1m,mode=0755 cf-lab-lustre-standin "$2" || {
  echo "mount.lustre (lab stand-in): cannot mount a tmpfs at $2 (the lab container needs CAP_SYS_ADMIN)" >&2
  exit 32
}
printf '%s\n' "LAB-ONLY stand-in for Lustre $1: an empty tmpfs, not a file system" > "$2/CLUSTERFORGE-LAB-STAND-IN"
"""


#: The real node_exporter reads the lab's stand-in sysfs tree (lab.monitoring_standins.SYSFS_ROOT, written by
#: `lab up` and the lab's faults) instead of the container's /sys, which has no HCA: a vendor drop-in of the OFED
#: stand-in (real OFED brings a real /sys/class/infiniband), so the rendered /etc/default file stays prod's own.
_NODE_EXPORTER_DROPIN = f"""# {LABEL} (doca-ofed): node_exporter reads the lab's stand-in sysfs tree, not /sys
[Service]
ExecStart=
ExecStart=/usr/bin/prometheus-node-exporter $ARGS --path.sysfs={SYSFS_ROOT}
"""

#: dcgm-exporter's stand-in: the rendered unit's `/usr/bin/dcgm-exporter -f FILE -c MS -a [HOST]:PORT` serves the
#: lab's DCGM-named metrics file (lab.monitoring_standins.DCGM_FILE) as /metrics; -f and -c are accepted and unused.
_DCGM_EXPORTER = f'''#!/usr/bin/python3
"""{LABEL} for NVIDIA dcgm-exporter: no GPU and no DCGM here. Serves {DCGM_FILE}
(written by the lab: clusterforge.sim.dcgm_textfile, the nvidia-smi stand-in's GPU UUIDs) as /metrics."""
import argparse
import http.server
import os

FILE = os.environ.get("CF_LAB_DCGM_FILE", "{DCGM_FILE}")
parser = argparse.ArgumentParser(prog="dcgm-exporter (lab stand-in)")
parser.add_argument("-a", "--address", default=":9400")
parser.add_argument("-f", "--collectors", default="")
parser.add_argument("-c", "--collect-interval", default="30000")
args, _ = parser.parse_known_args()
host, _, port = args.address.rpartition(":")


class Metrics(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.split("?")[0] != "/metrics":
            self.send_error(404)
            return
        try:
            with open(FILE, "rb") as fh:
                body = fh.read()
        except OSError as exc:
            self.send_error(503, f"no stand-in metrics yet: {{exc}}")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer((host, int(port)), Metrics).serve_forever()
'''


#: Lemur's agent: checks what the real lhsmd reads when it starts (its -config file's client_device and
#: enabled_plugins, each plugin in Lemur's plugin directory with its configuration beside the agent's), then
#: idles; a start the real agent would refuse fails, saying why.
_LHSMD = f'''#!/usr/bin/python3
"""{LABEL} for Lemur's lhsmd: no Lustre and no HSM coordinator here. Reads its configuration as the real agent
does when it starts, then idles (it mounts nothing and moves no data)."""
import os
import re
import signal
import sys

PLUGIN_DIR = os.environ.get("CF_LAB_LHSMD_PLUGIN_DIR", "/usr/libexec/lhsmd")


def fail(why):
    print("lhsmd (lab stand-in): " + why, file=sys.stderr)
    sys.exit(1)


args = sys.argv[1:]
config = args[args.index("-config") + 1] if "-config" in args[:-1] else "/etc/lhsmd/agent"
try:
    with open(config) as fh:
        text = fh.read()
except OSError as exc:
    fail(f"cannot read {{config}}: {{exc.strerror}}")
device = re.search(r'^\\s*client_device\\s*=\\s*"([^"]*)"', text, re.M)
if device is None or not re.fullmatch(r"[^:]+@[a-z0-9]+(:[^:]+@[a-z0-9]+)*:/[a-z][a-z0-9_]{{0,7}}", device.group(1)):
    fail(f"{{config}}: client_device must be NID[:NID...]:/FSNAME")
listed = re.search(r"^\\s*enabled_plugins\\s*=\\s*\\[([^\\]]*)\\]", text, re.M)
plugins = re.findall(r'"([^"]+)"', listed.group(1)) if listed else []
if not plugins:
    fail(f"{{config}}: no enabled_plugins: nothing would move data")
for plugin in plugins:
    if not os.access(os.path.join(PLUGIN_DIR, plugin), os.X_OK):
        fail(f"plugin {{plugin}} is not in {{PLUGIN_DIR}} (lemur-data-movers)")
    if not os.path.exists(os.path.join(os.path.dirname(config), plugin)):
        fail(f"plugin {{plugin}} has no configuration in {{os.path.dirname(config)}}")
print(f"lhsmd (LAB-ONLY stand-in): {{device.group(1)}} with {{', '.join(plugins)}}: idle, no Lustre here", flush=True)
signal.pause()
'''

_LEMUR_PLUGIN = f"""#!/bin/sh
# {LABEL} for a Lemur data mover: it moves no data. The lab's lhsmd stand-in checks it is here; it never runs it.
echo "$(basename "$0") (lab stand-in): no data mover here" >&2
exit 1
"""


def extra_files(name: str, version: str) -> dict[str, tuple[str, int]]:
    """Path -> (content, mode) beyond the README every stand-in ships."""
    if name == "doca-ofed":
        return {"usr/bin/ofed_info": (_OFED_INFO.replace("{version}", version), 0o755),
                "lib/systemd/system/openibd.service": (_unit("openibd (no driver is loaded)", _ONESHOT), 0o644),
                "lib/systemd/system/prometheus-node-exporter.service.d/cf-lab-sysfs.conf":
                (_NODE_EXPORTER_DROPIN, 0o644)}
    if name == DCGM_EXPORTER_PACKAGE:
        return {"usr/bin/dcgm-exporter": (_DCGM_EXPORTER, 0o755)}
    if name == TELEGRAF_PACKAGE:  # a prod rehearsal (telegraf path): the unit the deploy enables; collects nothing
        return {"lib/systemd/system/telegraf.service":
                (_unit("telegraf (an idle process: Telegraf is not installable here)", _IDLE), 0o644)}
    # the driver's own package and Fabric Manager under each family's names (catalog/os.yaml): Debian's
    # nvidia-driver-<branch>, the open modules' nvidia-open (Ubuntu, EL9); nvidia-fabricmanager[-<branch>], EL's
    # nvidia-fabric-manager (never Ubuntu's nvidia-driver-pinning-<branch>, which only pins the branch)
    if (name.startswith("nvidia-driver-") and not name.startswith("nvidia-driver-pinning-")) or name == "nvidia-open":
        return {"lib/systemd/system/nvidia-persistenced.service":
                (_unit("nvidia-persistenced (an idle process: no GPUs)", _IDLE), 0o644)}
    if name.startswith("nvidia-fabricmanager") or name == "nvidia-fabric-manager":
        return {"lib/systemd/system/nvidia-fabricmanager.service":
                (_unit("nvidia-fabricmanager (an idle process: no NVSwitch)", _IDLE), 0o644)}
    if name == LEMUR_AGENT_PACKAGE:
        return {"usr/sbin/lhsmd": (_LHSMD, 0o755)}
    if name == LEMUR_MOVERS_PACKAGE:
        return {f"usr/libexec/lhsmd/lhsm-plugin-{kind}": (_LEMUR_PLUGIN, 0o755) for kind in ("s3", "posix")}
    if name in ("lustre-client-utils", "lustre-client"):  # Debian's and Ubuntu's utilities; EL's lustre-client
        return {"usr/sbin/mount.lustre": (_MOUNT_LUSTRE, 0o755), **standin_lnet.package_files()}
    return {}


def build_package(work: Path, name: str, version: str, description: str) -> Path:
    root = work / f"{name}_{version}"
    if root.exists():
        shutil.rmtree(root)
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN/control").write_text(_control(name, version, description))
    doc = root / "usr/share/doc" / name
    doc.mkdir(parents=True)
    (doc / "CLUSTERFORGE-LAB-STAND-IN").write_text(
        f"{name} {version} is a {LABEL} package: it installs no real software.\n")
    for rel, (content, mode) in extra_files(name, version).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        path.chmod(mode)
    deb = work / "pool" / f"{name}_{version.replace(':', '%3a')}_all.deb"
    deb.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SOURCE_DATE_EPOCH": _EPOCH}
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(root), str(deb)],
                   check=True, capture_output=True, timeout=TOOL_TIMEOUT_S, env=env)
    shutil.rmtree(root)
    return deb


#: Real Debian packages the lab hosts need from the repository too (Ansible's apt module needs python3-apt;
#: the lab network has no route to a Debian mirror).
SUPPORT_PACKAGES = ("python3-apt", "python-apt-common", "distro-info-data")
#: The real Debian monitoring programs (the `monitoring` component) and what the lab image lacks of their
#: Depends (libc6, libzstd1 and init-system-helpers are in every Debian base system): the lab's hosts install
#: them with apt from the lab repository like any package.
MONITORING_PACKAGES = ("victoria-metrics", "prometheus-alertmanager", "prometheus-node-exporter", "adduser", "tzdata")


def download_debs(names: Sequence[str], dest: Path) -> list[Path]:
    """`apt-get download` real packages from this machine's configured mirror (cached in `dest`)."""
    dest.mkdir(parents=True, exist_ok=True)
    missing = [n for n in names if not list(dest.glob(f"{n}_*.deb"))]
    if missing:
        subprocess.run(["apt-get", "download", *missing], cwd=dest, check=True, capture_output=True,
                       timeout=TOOL_TIMEOUT_S)
    return sorted(dest.glob("*.deb"))


def build_repo(out: Path, pins: Iterable[Pin], *, kernels: Sequence[str] = (), suite: str = "lab",
               extra_versions: Iterable[Pin] = (), real_debs: Sequence[Path] = ()) -> Path:
    """Build (or rebuild) the repository under `out`; return `out`. Serve it with any HTTP server."""
    out.mkdir(parents=True, exist_ok=True)
    pool = out / "pool"
    if pool.exists():
        shutil.rmtree(pool)
    pool.mkdir()
    for deb in real_debs:
        shutil.copyfile(deb, pool / deb.name)
    wanted = {(p.package, p.version) for p in [*pins, *extra_versions]}
    wanted |= {(headers_package(k), "1.0-cfstandin1") for k in kernels}
    for name, version in sorted(wanted):
        build_package(out, name, version, "Lab-only placeholder with the real name and version; empty.")
    binary = out / "dists" / suite / "main" / "binary-amd64"
    binary.mkdir(parents=True, exist_ok=True)
    scan = subprocess.run(["dpkg-scanpackages", "--multiversion", "pool", "/dev/null"], cwd=out, check=True,
                          capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    (binary / "Packages").write_text(scan.stdout)
    with gzip.open(binary / "Packages.gz", "wt") as fh:
        fh.write(scan.stdout)
    release = subprocess.run(
        ["apt-ftparchive", "-o", f"APT::FTPArchive::Release::Suite={suite}",
         "-o", f"APT::FTPArchive::Release::Codename={suite}",
         "-o", "APT::FTPArchive::Release::Components=main",
         "-o", "APT::FTPArchive::Release::Architectures=amd64 all",
         "-o", f"APT::FTPArchive::Release::Label={LABEL}", "release", f"dists/{suite}"],
        cwd=out, check=True, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    (out / "dists" / suite / "Release").write_text(release.stdout)
    return out
