"""The lab's drain, reached from inside a container (the monitoring node's level 3 drain hook).

The lab inventory's `deploy.reboot.drain` is `clusterforge lab drain {host} --env inventories/lab`: on the
lab machine that records the drain in `<state>/drained.json` (`technician.set_drained`). The drain hook runs
it on the monitoring node, inside a container, where clusterforge is not installed. So every container gets
a LAB-ONLY `clusterforge` stand-in in /usr/local/sbin (the lab's guest tools, `STANDIN`) that understands
only `lab drain|resume HOST [--reason WHY] [--env ENV]` and leaves the request as a JSON file in OUTBOX, a writable bind
mount of `<state>/drain-outbox`; `fold` (run by `lab status`, `lab drain` and `lab resume` on the lab
machine) applies each request to drained.json exactly as `lab drain` does, noting where it came from, and
removes it. Nothing else is writable from a container.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clusterforge.lab.errors import FaultError
from clusterforge.lab.technician import set_drained

OUTBOX = "/var/lib/cf-lab-drain"
"""Where the stand-in writes, in every container (read-write)."""
HOST_DIR = "drain-outbox"
"""The lab-machine side: `<state>/drain-outbox`."""

STANDIN = '''#!/usr/bin/python3
# LAB-ONLY STAND-IN for clusterforge, installed by `clusterforge lab up` (read-only, /usr/local/sbin).
# clusterforge is not installed in the lab's containers. This understands only what the lab inventory's
# deploy.reboot.drain/resume run (the monitoring node's drain hook): `clusterforge lab drain|resume HOST
# [--reason WHY] [--env ENV]`, and leaves the request in OUTBOX; the lab machine applies it to the lab's drained.json
# (clusterforge.lab.drain_outbox.fold) as `clusterforge lab drain` would there.
# With the lab's real Slurm (`lab up --slurm`: /etc/slurm/slurm.conf here) it also tells Slurm itself:
# `scontrol update nodename=HOST state=drain reason=WHY` (or state=resume), and exits with scontrol's status.
import json, os, socket, subprocess, sys, time
OUTBOX = "@OUTBOX@"
args = sys.argv[1:]
opts = {"--env": None, "--reason": None}
for key in opts:
    if key in args:
        i = args.index(key)
        opts[key] = args[i + 1] if i + 1 < len(args) else ""
        args = args[:i] + args[i + 2:]
env, reason = opts["--env"], opts["--reason"]
if len(args) != 3 or args[0] != "lab" or args[1] not in ("drain", "resume") or "" in (env, reason):
    sys.exit("clusterforge (lab stand-in): only `clusterforge lab drain|resume HOST [--reason WHY] [--env ENV]` "
             "runs here")
req = {"event": args[1], "host": args[2], "env": env, "from": socket.gethostname(), "when": time.time()}
if reason is not None:
    req["reason"] = reason
name = "%d-%s.json" % (time.time_ns(), socket.gethostname())
tmp = os.path.join(OUTBOX, "." + name + ".tmp")
with open(tmp, "w", encoding="utf-8") as f:
    json.dump(req, f)
os.replace(tmp, os.path.join(OUTBOX, name))
print("%s %s: requested from %s (the lab applies it)" % (args[2], "drained" if args[1] == "drain" else "resumed",
                                                         socket.gethostname()))
if os.path.exists("/etc/slurm/slurm.conf"):
    act = ["state=drain", "reason=" + (reason or "cf-lab: drained")] if args[1] == "drain" else ["state=resume"]
    sys.exit(subprocess.run(["scontrol", "update", "nodename=" + args[2]] + act, check=False).returncode)
'''.replace("@OUTBOX@", OUTBOX)


def install_standin(sbin: Path) -> None:
    """The stand-in among the lab's guest tools (`<state>/guest/sbin`, read-only at /usr/local/sbin)."""
    (sbin / "clusterforge").write_text(STANDIN, encoding="utf-8")
    (sbin / "clusterforge").chmod(0o755)


def outbox(state_dir: Path) -> Path:
    return state_dir / HOST_DIR


def fold(state_dir: Path, known: set[str]) -> list[dict[str, Any]]:
    """Apply every request the containers left, oldest first; returns them, each with `applied` (False: an
    unknown host or a malformed request, kept out of drained.json and named in `error`)."""
    done: list[dict[str, Any]] = []
    box = outbox(state_dir)
    if not box.is_dir():
        return done
    for path in sorted(p for p in box.iterdir() if p.suffix == ".json" and not p.name.startswith(".")):
        try:
            req = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(req, dict) or req.get("event") not in ("drain", "resume") \
                    or not isinstance(req.get("host"), str):
                raise ValueError("not a drain or resume request")
            why = req.get("reason")
            set_drained(state_dir, req["host"], req["event"] == "drain", known,
                        why if isinstance(why, str) else None)
            req["applied"] = True
        except (OSError, ValueError, FaultError) as exc:
            req = {"file": path.name, "applied": False, "error": str(exc)}
        done.append(req)
        path.unlink(missing_ok=True)
    return done
