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

from ..resources import data_dir
from .desired import COMPONENTS, HostPlan
from .runner import HostResult, SshSettings

PLAYBOOK = data_dir("deploy") / "site.yml"
ROLES = data_dir("roles")
PLAYBOOK_TIMEOUT_S = 3600
UNSAFE = "__ansible_unsafe"
_RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)"
                    r"\s+rescued=(\d+)\s+ignored=(\d+)")
_FATAL = re.compile(r"^fatal: \[([^\]]+)\]: (FAILED|UNREACHABLE)! => (\{.*\})\s*$", re.MULTILINE)


def group_name(kind: str, value: str) -> str:
    return f"{kind}_" + re.sub(r"[^A-Za-z0-9_]", "_", value)


def _component_vars(plan: HostPlan) -> dict[str, Any]:
    out: dict[str, Any] = {"cf_components": [c.name for c in plan.components]}
    for name in COMPONENTS:
        comp = plan.component(name)
        p = f"cf_{name}_"
        files = [] if comp is None else [
            {"dest": f.dest, "content": f.content.rstrip("\n") if f.block else f.content, "mode": f"0{f.mode:o}",
             "block": f.block} for f in comp.files if not f.secret]
        out[p + "files"] = files
        out[p + "pins"] = [] if comp is None else [
            {"package": x.package, "version": x.version, "hold": x.hold} for x in comp.pins]
        out[p + "packages"] = [] if comp is None else list(comp.packages)
        out[p + "services"] = [] if comp is None else list(comp.services)
        out[p + "modules"] = [] if comp is None else list(comp.modules)
        out[p + "problems"] = [] if comp is None else list(comp.problems)
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


def parse_recap(text: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        m = _RECAP.match(line.strip())
        if m:
            keys = ("ok", "changed", "unreachable", "failed", "skipped", "rescued", "ignored")
            out[m.group(1)] = {k: int(v) for k, v in zip(keys, m.groups()[1:], strict=True)}
    return out


def failure_messages(text: str) -> dict[str, str]:
    """host -> the `msg` of its last `fatal: [host]: FAILED! => {...}` line."""
    out: dict[str, str] = {}
    for m in _FATAL.finditer(text):
        try:
            msg = str(json.loads(m.group(3)).get("msg", ""))
        except ValueError:
            msg = m.group(3)
        out[m.group(1)] = f"{m.group(2).lower()}: {msg}"[:300]
    return out


def results_from_recap(plans: Sequence[HostPlan], recap: dict[str, dict[str, int]],
                       messages: dict[str, str] | None = None) -> list[HostResult]:
    msgs = messages or {}
    out = []
    for plan in plans:
        r = recap.get(plan.name)
        if r is None:
            out.append(HostResult(plan.name, "failed", error="no result from ansible-playbook"))
        elif r["unreachable"]:
            out.append(HostResult(plan.name, "unreachable", error=msgs.get(plan.name, "unreachable")))
        elif r["failed"]:
            out.append(HostResult(plan.name, "failed", error=msgs.get(plan.name, f"{r['failed']} task(s) failed")))
        else:
            res = HostResult(plan.name, "changed" if r["changed"] else "ok")
            res.notes.append(f"ansible: changed={r['changed']} ok={r['ok']}")
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


def ansible_env() -> dict[str, str]:
    env = dict(os.environ)
    env |= {"ANSIBLE_ROLES_PATH": str(ROLES), "ANSIBLE_PIPELINING": "1", "ANSIBLE_HOST_KEY_CHECKING": "True",
            "ANSIBLE_SSH_ARGS": "-o ControlMaster=auto -o ControlPersist=60s", "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_RETRY_FILES_ENABLED": "0", "ANSIBLE_DEPRECATION_WARNINGS": "0"}
    return env


def run_playbook(plans: Sequence[HostPlan], ssh: SshSettings, *, dry_run: bool, forks: int = 32,
                 batch: int = 0, max_fail_percent: int = 100,
                 timeout_s: int = PLAYBOOK_TIMEOUT_S) -> tuple[list[HostResult], str]:
    """Run deploy/site.yml against `plans`; per-host results from the play recap, plus the output."""
    with tempfile.TemporaryDirectory(prefix="cf-ansible-") as tmp:
        inv_path = Path(tmp) / "inventory.json"
        static = _static_inventory(inventory(plans, ssh))
        inv_path.write_text(json.dumps(static))
        argv = playbook_argv(inv_path, dry_run=dry_run, forks=forks, batch=batch, max_fail_percent=max_fail_percent)
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=ansible_env(), check=False)
    output = proc.stdout + proc.stderr
    return results_from_recap(plans, parse_recap(proc.stdout), failure_messages(output)), output


def _static_inventory(listing: dict[str, Any]) -> dict[str, Any]:
    """The `--list` form converted to the YAML/JSON inventory form ansible-playbook reads from a file."""
    hostvars = listing["_meta"]["hostvars"]
    children: dict[str, Any] = {g: {"hosts": {h: {} for h in listing[g]["hosts"]}} for g in listing["all"]["children"]}
    return {"all": {"hosts": hostvars, "children": children}}
