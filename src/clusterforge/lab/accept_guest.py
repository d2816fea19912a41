"""The acceptance tools inside the lab's containers: LAB-ONLY stand-ins that `clusterforge accept ENV --run DIR`
reaches over SSH exactly as it reaches the real tools on a cluster (docs/accept.md, "On the lab").

`clusterforge lab accept --arm` computes what each tool would print on each host now (lab/accept_standins.py:
real captures, figures from the lab's fabric) and leaves it in the host's lab directory (`ANSWERS` under
/etc/clusterforge-lab, read-only in the container); it puts `STANDIN` among the lab's guest tools as `dcgmi`,
`nvidia-smi`, `all_reduce_perf`, `mpirun` and `ib_write_bw`. Run over SSH, each stand-in prints its host's
answer for its argv; for an argv the acceptance plan does not run, or when the lab is not armed, it runs
the next tool of that name on PATH (the lab's own nvidia-smi stand-in answers validate) or exits 127 as a
missing tool does.

`ib_write_bw` keeps perftest's server/client protocol: the server (no address) prints perftest's banner,
listens on its `-p` TCP port for one client and tells it which node, HCA and port it serves; the client (an
address) connects there (refused: perftest's "Couldn't connect" and exit 1) and prints the answer for its
own port and that server's. So a wrong address, port or round reaches the runner as it would on a cluster.
`lab heal` disarms (answers and tools removed).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from clusterforge.accept.plan import AcceptPlan
from clusterforge.lab.accept_standins import capture

TOOLS = ("dcgmi", "nvidia-smi", "all_reduce_perf", "mpirun", "ib_write_bw")
ANSWERS = "accept"
"""The answers' folder in a host's lab directory (`<state>/hosts/<host>/accept`, /etc/clusterforge-lab/accept)."""
FAILED_MARK = "\x00rc=1\n"
"""An answer starting with this is printed on stderr with exit status 1 (perftest's failure output)."""


def hosts_key(hosts: str) -> str:
    """The file name of an `mpirun -H HOSTS` answer."""
    return hashlib.sha256(hosts.encode()).hexdigest()[:20]


def answers(plan: AcceptPlan, texts: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """host -> (path under its ANSWERS folder -> what its tool prints), from the run directory's texts
    (lab/accept_standins.outputs); perftest's failure output is printed as a failure (stderr, exit 1)."""
    failure = capture("ib_write_bw-failed")
    out: dict[str, dict[str, str]] = {}

    def put(host: str, rel: str, text_of: str) -> None:
        text = texts[text_of]
        out.setdefault(host, {})[rel] = (FAILED_MARK + text) if text == failure else text

    for t in plan.nodes:
        for name in t.commands:
            put(t.node, f"nodes/{name}", f"nodes/{t.node}/{name}")
    for lt in plan.links:
        put(lt.client.node, f"links/{lt.name}", f"links/{lt.name}")
    for ft in plan.fabric:
        argv = ft.argv()
        put(ft.nodes[0], f"nccl/{hosts_key(argv[argv.index('-H') + 1])}", f"nccl/{ft.name}")
    return out


def arm(sbin: Path, host_dirs: Mapping[str, Path], per_host: Mapping[str, Mapping[str, str]]) -> int:
    """The stand-in tools among the guest tools and each host's answers (replacing any before); how many."""
    script = sbin / "cf-accept-standin"
    tmp = sbin / ".cf-accept-standin.tmp"
    tmp.write_text(STANDIN, encoding="utf-8")
    tmp.chmod(0o755)
    os.replace(tmp, script)
    for tool in TOOLS:
        link = sbin / tool
        if not link.is_symlink():
            link.unlink(missing_ok=True)
            link.symlink_to(script.name)
    n = 0
    for host, folder in host_dirs.items():
        target = folder / ANSWERS
        staging = folder / (ANSWERS + ".new")
        shutil.rmtree(staging, ignore_errors=True)
        for rel, text in per_host.get(host, {}).items():
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            n += 1
        staging.mkdir(parents=True, exist_ok=True)
        (staging / "node").write_text(host + "\n", encoding="utf-8")
        for d in [staging, *(p for p in staging.rglob("*") if p.is_dir())]:
            d.chmod(0o755)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
    return n


def disarm(host_dirs: Mapping[str, Path], sbin: Path | None = None) -> int:
    """Every host's answers removed, and the stand-in tools from `sbin` (the guest tools); how many hosts
    were armed."""
    if sbin is not None:
        for name in (*TOOLS, "cf-accept-standin"):
            path = sbin / name
            if name == "cf-accept-standin" or (path.is_symlink() and os.readlink(path) == "cf-accept-standin"):
                path.unlink(missing_ok=True)
    n = 0
    for folder in host_dirs.values():
        if (folder / ANSWERS).is_dir():
            shutil.rmtree(folder / ANSWERS)
            n += 1
    return n


STANDIN = r'''#!/usr/bin/python3
# LAB-ONLY STAND-IN for dcgmi, nvidia-smi, all_reduce_perf, mpirun and ib_write_bw (clusterforge lab accept
# --arm). The lab has no GPUs and no RDMA data path: each prints what `clusterforge lab accept` computed for
# this host from the lab's fabric (real captures, figures replaced); any other argv goes to the next tool of
# that name on PATH (the lab's own stand-ins), or exits 127 as a missing tool does.
import json, os, socket, sys
ROOT = os.path.join(os.path.dirname(os.environ.get("CLUSTERFORGE_LAB_IB_CONF", "/etc/clusterforge-lab/ib.json")),
                    "@ANSWERS@")
FAILED = "@FAILED@"
tool, args = os.path.basename(sys.argv[0]), sys.argv[1:]


def missing(why):
    """Not ours to answer: the next `tool` on PATH runs instead (the lab's own nvidia-smi stand-in answers
    validate), else 127 as for a missing tool."""
    here = os.path.dirname(os.path.abspath(sys.argv[0]))
    for d in os.environ.get("PATH", "").split(os.pathsep):
        cand = os.path.join(d, tool)
        if d and os.path.abspath(d) != here and os.path.isfile(cand) and os.access(cand, os.X_OK):
            os.execv(cand, [tool, *args])
    sys.stderr.write("%s: %s (LAB-ONLY stand-in: clusterforge lab accept --arm)\n" % (tool, why))
    sys.exit(127)


def emit(rel):
    try:
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        missing("no answer for this host and argv")
    if text.startswith(FAILED):
        sys.stderr.write(text[len(FAILED):])
        sys.exit(1)
    sys.stdout.write(text)
    sys.exit(0)


def opt(name, default=None):
    return args[args.index(name) + 1] if name in args and args.index(name) + 1 < len(args) else default


if not os.path.isdir(ROOT):
    missing("the lab is not armed")
if tool == "dcgmi" and args[:2] == ["diag", "-r"]:
    emit("nodes/dcgmi-diag")
elif tool == "nvidia-smi" and args == ["-q"]:
    emit("nodes/nvidia-smi-q")
elif tool == "nvidia-smi" and args in (["nvlink", "--status"], ["nvlink", "-s"]):  # nvidia-smi takes both
    emit("nodes/nvidia-smi-nvlink")
elif tool == "all_reduce_perf" and "-g" in args and opt("-g") != "1":
    emit("nodes/nccl-single")
elif tool == "mpirun" and "-H" in args:
    import hashlib
    emit("nccl/" + hashlib.sha256(opt("-H").encode()).hexdigest()[:20])
elif tool == "ib_write_bw" and "-d" in args and "-i" in args and "-p" in args:
    with open(os.path.join(ROOT, "node"), encoding="utf-8") as f:
        node = f.read().strip()
    hca, port, tcp = opt("-d"), opt("-i"), int(opt("-p"))
    valued = {"-s", "-D", "-d", "-i", "-p"}
    positional = [a for i, a in enumerate(args) if not a.startswith("-") and args[i - 1] not in valued]
    if not positional:  # the server: one client, then exit (as perftest's server does)
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            srv.bind(("0.0.0.0", tcp))
        except OSError:
            sys.stderr.write(" Couldn't listen to port %d\n" % tcp)
            sys.exit(1)
        srv.listen(1)
        srv.settimeout(120)
        sys.stdout.write("\n************************************\n* Waiting for client to connect... *\n"
                         "************************************\n")
        sys.stdout.flush()
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            sys.stderr.write(" Server timed out waiting for a client\n")
            sys.exit(1)
        conn.sendall((json.dumps({"node": node, "hca": hca, "port": port}) + "\n").encode())
        conn.settimeout(30)
        try:
            conn.recv(1)
        except OSError:
            pass
        conn.close()
        sys.exit(0)
    addr = positional[-1]
    try:
        conn = socket.create_connection((addr, tcp), timeout=10)
        peer = json.loads(conn.makefile().readline())
        conn.close()
    except (OSError, ValueError):
        sys.stderr.write("Couldn't connect to %s:%d\nUnable to open file descriptor for socket connection\n"
                         % (addr, tcp))
        sys.exit(1)
    emit("links/%s_%s_%s--%s_%s_%s" % (node, hca, port, peer["node"], peer["hca"], peer["port"]))
else:
    missing("not an argv the acceptance plan runs")
'''.replace("@ANSWERS@", ANSWERS).replace("@FAILED@", FAILED_MARK.replace("\x00", "\\x00").replace("\n", "\\n"))
