"""The Ansible engine: the same host plans as Ansible's JSON inventory, and an ansible-playbook runner.

Hostvars carry, per component, `cf_<component>_files` (destination, the file's content as rendered
here in Python, mode, block), `_pins`, `_packages`, `_services`, `_modules` and `_problems`; the roles
in roles/cf_<component>/ copy that content, so both engines write identical bytes and Ansible never
renders a template with inventory text in its context.

Inventory text is data, never code: every string in the hostvars goes out as
`{"__ansible_unsafe": ...}` (the JSON form of `!unsafe`), so Ansible never templates it: a
`{{ lookup('pipe', ...) }}` in a mount option arrives on the host literally.
Secrets never enter the inventory: the repo role reads $CLUSTERFORGE_REPO_AUTH_FILE itself.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..util.resources import data_dir
from .component import RETIRE, HostPlan
from .desired import COMPONENTS
from .packages import headers_package
from .runner import HostResult, SshSettings

PLAYBOOK = data_dir("deploy") / "site.yml"
ROLES = data_dir("roles")
PLAYBOOK_TIMEOUT_S = 3600

#: Controller memory of one Ansible fork, measured on the deploy bench's SSH hosts (issue #26: 43 MB per fork at
#: 16 hosts, 64 MB at 64; docs/scale.md): the forks are sized from it, never one per host.
FORK_MB = 65
#: What a run leaves free on the controller, at least.
FREE_FLOOR_MB = 6 * 1024


def mem_available_mb(meminfo: Path = Path("/proc/meminfo")) -> int:
    """MemAvailable in MiB (0 when the kernel does not say)."""
    for line in meminfo.read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    return 0


def bounded_forks(wanted: int, hosts: int, available_mb: int | None = None) -> int:
    """Ansible's forks: `wanted` (deploy.parallel), at most one per host, and at most as many as fit in what
    leaves FREE_FLOOR_MB free at FORK_MB each (at least 1: a machine that tight runs one at a time)."""
    avail = mem_available_mb() if available_mb is None else available_mb
    room = (avail - FREE_FLOOR_MB) // FORK_MB
    return max(1, min(wanted, hosts, room))


CALLBACKS = data_dir("deploy") / "callback_plugins"
EVENTS_CALLBACK = "clusterforge_events"
EVENTS_ENV = "CLUSTERFORGE_ANSIBLE_EVENTS"
UNSAFE = "__ansible_unsafe"


def group_name(kind: str, value: str) -> str:
    return f"{kind}_" + re.sub(r"[^A-Za-z0-9_]", "_", value)


def _component_vars(plan: HostPlan) -> dict[str, Any]:
    out: dict[str, Any] = {"cf_components": [c.name for c in plan.components]}
    target = plan.os  # the declared OS, checked first (roles/cf_os)
    out["cf_os_declared"] = {} if target is None else {"release": target.release, "name": target.name,
                                              "id": target.os_release_id, "version_id": target.version_id}
    # how packages are installed and held on this host, and its kernel headers' name (roles/cf_common, cf_nvidia)
    out["cf_package_manager"] = plan.package_manager
    out["cf_selinux"] = any(c.selinux for c in plan.components)  # every written file gets its context
    out["cf_kernel_headers"] = headers_package("{kernel}", plan.family)
    nvidia = plan.component("nvidia")
    out["cf_nvidia_streams"] = list(nvidia.streams) if nvidia is not None else []
    for name in COMPONENTS:
        comp = plan.component(name)
        p = f"cf_{name}_"
        files = [] if comp is None else [
            {"dest": f.dest, "content": f.content.rstrip("\n") if f.block else f.content, "mode": f"0{f.mode:o}",
             "block": f.block, "unit": f.unit, "reload": f.reload} for f in comp.files if not f.secret]
        out[p + "files"] = files
        out[p + "pins"] = [] if comp is None else [
            {"package": x.package, "version": x.version, "hold": x.hold} for x in comp.pins]
        out[p + "packages"] = [] if comp is None else list(comp.packages)
        out[p + "services"] = [] if comp is None else list(comp.services)
        out[p + "modules"] = [] if comp is None else list(comp.modules)
        out[p + "problems"] = [] if comp is None else list(comp.problems)
    retire = plan.component(RETIRE)  # what the host no longer wants (deploy/retire.py; roles/cf_retire)
    out["cf_retire_stop"] = list(retire.stop) if retire is not None else []
    out["cf_retire_remove"] = list(retire.remove) if retire is not None else []
    out["cf_retire_unhold"] = list(retire.unhold) if retire is not None else []
    opensm = plan.component("opensm")  # the SM start order (roles/cf_opensm/tasks/start.yml, play 2 of site.yml)
    out["cf_opensm_start_after"] = opensm.start_after if opensm is not None else ""
    out["cf_opensm_wait_master"] = opensm.wait_master if opensm is not None else False
    return out


def unsafe(value: Any) -> Any:
    """`value` with every string marked unsafe for Ansible (`__ansible_unsafe`, what `!unsafe` is in YAML):
    Ansible uses such a string as it is and never renders it as a template."""
    if isinstance(value, str):
        return {UNSAFE: value}
    if isinstance(value, dict):
        return {k: unsafe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [unsafe(v) for v in value]
    return value


def plain(value: Any) -> Any:
    """The inverse of `unsafe` (for reading our own inventory back)."""
    if isinstance(value, dict):
        if set(value) == {UNSAFE}:
            return value[UNSAFE]
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def ssh_common_args(ssh: SshSettings) -> str:
    args = ["-o", "StrictHostKeyChecking=yes", "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
            "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3",
            "-o", f"ConnectTimeout={ssh.connect_timeout_s}"]
    if ssh.known_hosts is not None:
        args += ["-o", f"UserKnownHostsFile={ssh.known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null"]
    return shlex.join(args)


def inventory(plans: Sequence[HostPlan], ssh: SshSettings | None = None) -> dict[str, Any]:
    """Ansible's JSON inventory (`--list` form): groups by role and rack; hostvars with every file's content,
    each string marked unsafe (see the module doc)."""
    groups: dict[str, dict[str, list[str]]] = {}
    hostvars: dict[str, dict[str, Any]] = {}
    for plan in plans:
        for g in (group_name("role", plan.role), group_name("rack", plan.rack)):
            groups.setdefault(g, {"hosts": []})["hosts"].append(plan.name)
        hv: dict[str, Any] = {"ansible_host": plan.address, "cf_rack": plan.rack, "cf_role": plan.role,
                              "ansible_python_interpreter": "/usr/bin/python3"}
        if ssh is not None:
            hv |= {"ansible_user": ssh.user, "ansible_port": ssh.port, "ansible_ssh_common_args": ssh_common_args(ssh)}
            if ssh.key is not None:
                hv["ansible_ssh_private_key_file"] = str(ssh.key)
        hv |= _component_vars(plan)
        hostvars[plan.name] = {key: unsafe(value) for key, value in hv.items()}
    data: dict[str, Any] = {"_meta": {"hostvars": hostvars},
                            "all": {"children": sorted(groups), "hosts": []}}
    data |= {g: groups[g] for g in sorted(groups)}
    return data


def read_events(path: Path) -> list[dict[str, Any]]:
    """The JSON lines the clusterforge_events callback wrote (deploy/callback_plugins/)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.append(json.loads(line))
    return out


def _where(ev: dict[str, Any]) -> str:
    """`component: task` (the shared cf_common tasks name the component they ran for), else `role: task`."""
    who = ev.get("component") or str(ev.get("role", "")).removeprefix("cf_")
    return f"{who}: {ev.get('task', '')}" if who else str(ev.get("task", ""))


def results_from_events(plans: Sequence[HostPlan], events: Sequence[dict[str, Any]],
                        output: str = "") -> list[HostResult]:
    """Per-host results from the callback's events: the final stats say ok / changed / failed / unreachable;
    a failure carries the role, task and message of the host's failed result; a change names its tasks."""
    stats: dict[str, dict[str, int]] = {}
    failures: dict[str, str] = {}
    changed: dict[str, list[str]] = {}
    for ev in events:
        kind, host = ev.get("event"), str(ev.get("host", ""))
        if kind == "stats":
            stats = {h: {k: int(v) for k, v in counts.items()} for h, counts in ev["hosts"].items()}
        elif kind in ("failed", "unreachable") and not ev.get("ignored"):
            failures[host] = f"{kind}: {_where(ev)}: {ev.get('msg', '')}".strip()[:300]
        elif kind == "ok" and ev.get("changed"):
            changed.setdefault(host, []).append(_where(ev))
    tail = " | ".join(output.strip().splitlines()[-3:])[:300]
    out = []
    for plan in plans:
        r = stats.get(plan.name)
        if r is None:
            out.append(HostResult(plan.name, "failed", error=failures.get(plan.name) or
                                  f"no result from ansible-playbook{': ' + tail if tail else ''}"))
        elif r.get("unreachable"):
            out.append(HostResult(plan.name, "unreachable", error=failures.get(plan.name, "unreachable")))
        elif r.get("failures"):
            out.append(HostResult(plan.name, "failed",
                                  error=failures.get(plan.name, f"{r['failures']} task(s) failed")))
        else:
            res = HostResult(plan.name, "changed" if r.get("changed") else "ok")
            res.notes.append(f"ansible: changed={r.get('changed', 0)} ok={r.get('ok', 0)}")
            res.notes += [f"changed: {t}" for t in changed.get(plan.name, [])]
            out.append(res)
    return out


def playbook_argv(inventory_path: Path, *, dry_run: bool, forks: int, batch: int = 0,
                  max_fail_percent: int = 100) -> list[str]:
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(inventory_path), str(PLAYBOOK),
            "--forks", str(forks)]
    if dry_run:
        argv += ["--check", "--diff"]
    if batch:
        argv += ["-e", f"cf_serial={batch}"]
    if max_fail_percent < 100:
        argv += ["-e", f"cf_max_fail_percent={max_fail_percent}"]
    return argv


def ansible_env(events: Path | None = None, strategy: str = "linear") -> dict[str, str]:
    """ansible-playbook's environment: our roles, SSH settings, and (with `events`) the callback that
    writes each task result and the final stats there as JSON lines."""
    env = dict(os.environ)
    if events is not None:
        env |= {"ANSIBLE_CALLBACK_PLUGINS": str(CALLBACKS), "ANSIBLE_CALLBACKS_ENABLED": EVENTS_CALLBACK,
                EVENTS_ENV: str(events)}
    env |= {"ANSIBLE_ROLES_PATH": str(ROLES), "ANSIBLE_PIPELINING": "1", "ANSIBLE_HOST_KEY_CHECKING": "True",
            "ANSIBLE_SSH_ARGS": "-o ControlMaster=auto -o ControlPersist=60s", "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_RETRY_FILES_ENABLED": "0", "ANSIBLE_DEPRECATION_WARNINGS": "0", "ANSIBLE_STRATEGY": strategy}
    if strategy.startswith("mitogen_"):
        env["ANSIBLE_STRATEGY_PLUGINS"] = str(mitogen_strategies())
    return env


def mitogen_strategies() -> Path:
    """The folder of mitogen's Ansible strategy plugins (mitogen_linear, mitogen_free); mitogen is an optional
    extra (`pip install clusterforge[mitogen]`), so asking for its strategy without it is a clear error."""
    try:
        import ansible_mitogen  # type: ignore[import-untyped]
    except ImportError as exc:
        raise ValueError("a mitogen_* Ansible strategy needs mitogen installed (pip install mitogen)") from exc
    return Path(ansible_mitogen.__file__).parent / "plugins" / "strategy"


def run_playbook(plans: Sequence[HostPlan], ssh: SshSettings, *, dry_run: bool, forks: int = 32,
                 batch: int = 0, max_fail_percent: int = 100, strategy: str = "linear",
                 timeout_s: int = PLAYBOOK_TIMEOUT_S) -> tuple[list[HostResult], str]:
    """Run deploy/site.yml against `plans`; per-host results from the callback's events, plus the output.
    `forks` is bounded by bounded_forks (memory, hosts);
    `strategy` is Ansible's (linear or free; mitogen_linear or mitogen_free with mitogen installed)."""
    forks = bounded_forks(forks, len(plans))
    with tempfile.TemporaryDirectory(prefix="cf-ansible-") as tmp:
        inv_path = Path(tmp) / "inventory.json"
        static = _static_inventory(inventory(plans, ssh))
        inv_path.write_text(json.dumps(static))
        argv = playbook_argv(inv_path, dry_run=dry_run, forks=forks, batch=batch, max_fail_percent=max_fail_percent)
        events = Path(tmp) / "events.jsonl"
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                              env=ansible_env(events, strategy),
                              check=False)
        output = proc.stdout + proc.stderr
        return results_from_events(plans, read_events(events), output), output


def _static_inventory(listing: dict[str, Any]) -> dict[str, Any]:
    """The `--list` form converted to the YAML/JSON inventory form ansible-playbook reads from a file."""
    hostvars = listing["_meta"]["hostvars"]
    children: dict[str, Any] = {g: {"hosts": {h: {} for h in listing[g]["hosts"]}} for g in listing["all"]["children"]}
    return {"all": {"hosts": hostvars, "children": children}}
