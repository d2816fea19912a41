"""The same work as deploy/site.py, written with pyinfra's own operations (the bench's comparison).

Per component: files.put for its files (a managed block: merged, rewritten in place, see below),
handlers through `_if=` on their changes,
apt.update after the repo's sources changed, apt.packages with the pins (`pkg=version`) and the unpinned
packages, `apt-mark hold` for pins not held yet (pyinfra has no hold operation: a fact guards a shell),
systemd.service where systemd runs, server.modprobe once the GPU driver is loaded. It skips, as the
CLI path of deploy/site.py does, the runner's kernel-headers preflight and ofed_info check.
"""

import base64
import shlex
from io import StringIO

from pyinfra import host
from pyinfra.facts.files import Directory, FileContents
from pyinfra.facts.server import Command
from pyinfra.operations import apt, files, server, systemd
from pyinfra.operations.util import any_changed

from clusterforge.deploy.desired import COMPONENTS, merge_block

plan = host.data.cf_plan
systemd_runs = bool(host.get_fact(Directory, "/run/systemd/system"))
nvidia_loaded = bool(host.get_fact(Directory, "/sys/module/nvidia"))
HANDLERS = {
    "opensm-resweep": "pids=$(pgrep -x opensm || true); if [ -n \"$pids\" ]; then kill -HUP $pids; "
                      "elif [ -d /run/systemd/system ]; then systemctl restart opensm; fi",
    "systemd-reload": "[ ! -d /run/systemd/system ] || systemctl daemon-reload",
    "netplan-apply": "! command -v netplan >/dev/null || netplan apply",
    "timesync-restart": "[ ! -d /run/systemd/system ] || systemctl try-restart systemd-timesyncd",
}

for name in host.loop(COMPONENTS):
    comp = plan.component(name)
    if comp is None:
        continue
    changed = []
    for f in comp.files:
        if f.block:
            # files.block (like files.put) replaces the file by rename, which a bind-mounted file refuses (a
            # container's /etc/hosts: "Device or resource busy"); the block is merged here and the file
            # rewritten in place when it differs, as clusterforge's engine does
            lines = host.get_fact(FileContents, f.dest) or []
            current = "\n".join(lines) + ("\n" if lines else "")
            want = merge_block(current, f.content)
            payload = base64.b64encode(want.encode()).decode()
            op = server.shell(name=f"{name}: block in {f.dest}",
                              commands=[] if want == current else
                              [f"printf %s {payload} | base64 -d > {shlex.quote(f.dest)}"])
        else:
            op = files.put(name=f"{name}: {f.dest}", src=StringIO(f.content), dest=f.dest, mode=f"{f.mode:o}")
        changed.append(op)
    if comp.handler == "apt-update" and changed:
        apt.update(name=f"{name}: apt-get update", _if=any_changed(*changed))
    wanted = [f"{p.package}={p.version}" for p in comp.pins] + list(comp.packages)
    if wanted:
        apt.packages(name=f"{name}: packages", packages=wanted, allow_downgrades=True,
                     extra_install_args="--allow-change-held-packages -o Dpkg::Options::=--force-confold")
    holds = [p.package for p in comp.pins if p.hold]
    if holds:
        held = set((host.get_fact(Command, "apt-mark showhold") or "").split())
        todo = [p for p in holds if p not in held]
        if todo:
            server.shell(name=f"{name}: hold", commands=["apt-mark hold " + " ".join(todo)])
    if systemd_runs:
        for unit in comp.services:
            systemd.service(name=f"{name}: service {unit}", service=unit, running=True, enabled=True)
    if nvidia_loaded:
        for module in comp.modules:
            server.modprobe(name=f"{name}: modprobe {module}", module=module)
    if comp.handler in HANDLERS and changed:
        server.shell(name=f"{name}: {comp.handler}", commands=[HANDLERS[comp.handler]],
                     _if=any_changed(*changed))
