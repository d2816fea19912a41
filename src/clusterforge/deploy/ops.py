"""pyinfra operations over the pure layers, for the pyinfra CLI (`deploy/site.py`, `deploy/<component>.py`).

`deploy_component(plan, component)` adds one operation per action the component has on this host, each
named for what it does, so pyinfra's output reads like its own operations:

    nccl: files (/etc/nccl.conf)
    nccl: packages (libnccl2=2.21.5-1+cuda12.4, libnccl-dev=2.21.5-1+cuda12.4, nccl-tests)
    nccl: hold (libnccl2, libnccl-dev)
    opensm: re-sweep when its files changed

Every operation reads the one `HostState` fact (a single read-only probe per host, read once for the
run: pyinfra prepares all operations before executing any) and yields exactly the commands
`changes.component_changes` says are still needed for its action: a converged host gets no command
and pyinfra reports no change. `clusterforge deploy` drives the same pure functions through pyinfra's
API with per-host isolation (runner.py).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, cast

from pyinfra.api.operation import operation
from pyinfra.context import host

from .changes import WAIT_MASTER_SCRIPT, Change, change_lines, component_changes, starts_opensm
from .component import RETIRE, Component, HostPlan
from .facts import HostFacts, HostState
from .os_target import OsFound, mismatch
from .pkgmgr import APT, manager
from .runner import probe_args

APT_UPDATE = APT.refresh
ACTIONS = ("retire", "files", "packages", "hold", "services", "modules", "handler")
"""The actions of a component, in the order they run (the order of `component_changes`)."""
KIND = {"retire": "",  # every change of the `retire` component (deploy/retire.py)
        "files": "file", "packages": "package", "hold": "hold", "services": "service", "modules": "module",
        "handler": "handler"}
HANDLERS = {"opensm-resweep": "re-sweep when its files changed",
            "systemd-reload": "daemon-reload when its files changed",
            "netplan-apply": "netplan apply when its files changed",
            "timesync-restart": "restart systemd-timesyncd when its files changed",
            "apt-update": "apt-get update when its files changed",
            "units": "restart or reload the services whose files changed"}


def op_name(comp: Component, action: str) -> str | None:
    """`<component>: <action> (<what>)`, or None when the component has nothing of that action here."""
    what: list[str] = []
    if (action == "retire") != (comp.name == RETIRE):
        return None
    if action == "retire":  # `retire: stop lhsmd, stop lnet, remove /etc/lnet.conf, unhold lemur-hsm-agent`
        what = [*(f"stop {u}" for u in comp.stop), *(f"remove {f}" for f in comp.remove),
                *(f"unhold {p}" for p in comp.unhold)]
        return f"{comp.name}: {', '.join(what)}" if what else None
    if action == "files":
        what = [f.dest for f in comp.files]
    elif action == "packages":
        what = [f"{p.package}={p.version}" for p in comp.pins] + list(comp.packages)
    elif action == "hold":
        what = [p.package for p in comp.pins if p.hold]
    elif action == "services":
        what = list(comp.services)
    elif action == "modules":
        what = list(comp.modules)
    elif action == "handler":
        if comp.handler == "apt-update" and comp.package_manager == "dnf":
            return f"{comp.name}: dnf makecache when its files changed" if comp.files else None
        return f"{comp.name}: {HANDLERS[comp.handler]}" if comp.handler in HANDLERS and comp.files else None
    else:
        raise ValueError(f"unknown action {action!r}: one of {', '.join(ACTIONS)}")
    return f"{comp.name}: {action} ({', '.join(what)})" if what else None


def action_commands(comp: Component, action: str, facts: HostFacts, plan: HostPlan | None = None) -> list[str]:
    """Facts in -> the shell commands of one action out (file uploads inline as base64, as the runner's).

    apt's lists are refreshed once per host, as the runner does: by the repo's handler when its sources
    change, else before the first component (of `plan`) that installs anything."""
    changes = component_changes(comp, facts)
    refresh = manager(comp.package_manager).refresh
    if action == "handler" and comp.handler == "apt-update":
        # the repo component's sources changed: refresh the package lists before any package is installed
        return [refresh] if any(c.kind == "file" for c in changes) else []
    mine: list[Change] = changes if action == "retire" else [c for c in changes if c.kind == KIND[action]]
    lines = [line for ch in mine for line in change_lines(ch)]
    if action == "packages" and lines and (plan is None or _first_to_install(plan, facts) == comp.name):
        lines.insert(0, refresh)
    return lines


def _first_to_install(plan: HostPlan, facts: HostFacts) -> str | None:
    """The component whose packages op refreshes apt: None when the repo's handler does it this run."""
    for comp in plan.components:
        changes = component_changes(comp, facts)
        if comp.handler == "apt-update" and any(c.kind == "file" for c in changes):
            return None
        if any(c.kind == "package" for c in changes):
            return comp.name
    return None


def change_commands(component: Component, facts: HostFacts) -> list[str]:
    """Every action's commands of one component, in order."""
    return [line for action in ACTIONS for line in action_commands(component, action, facts)]


@operation()
def apply(plan: HostPlan, component: str, action: str) -> Generator[str, None, None]:
    """Bring one action (files, packages, hold, services, modules, handler) of one component to the plan."""
    comp = plan.component(component)
    if comp is None:
        return
    if comp.problems:
        raise ValueError(f"{component} preflight: " + "; ".join(comp.problems))
    yield from action_commands(comp, action, _facts(plan), plan)


@operation()
def wait_master(plan: HostPlan) -> Generator[str, None, None]:
    """After this host's OpenSM started in this run: wait (at most MASTER_WAIT_S) until an SM answers as MASTER."""
    comp = plan.component("opensm")
    if comp is not None and comp.wait_master and starts_opensm(component_changes(comp, _facts(plan))):
        yield WAIT_MASTER_SCRIPT


_FACTS: dict[tuple[int, str], HostFacts] = {}


def _facts(plan: HostPlan) -> HostFacts:
    """The host's `HostState`, probed once per host and run: pyinfra prepares every operation before it
    executes any, so each operation would see this same state anyway; one probe instead of one per action."""
    key = (id(host.state), host.name)
    if key not in _FACTS:
        _FACTS[key] = host.get_fact(HostState, **probe_args(plan))
    return _FACTS[key]


def check_os(plan: HostPlan) -> None:
    """Refuse this host, before any operation of it is added, when its /etc/os-release is not the declared OS
    (the runner's and roles/cf_os's rule: os_target.py)."""
    if plan.os is not None and (wrong := mismatch(plan.os, _facts(plan).os or OsFound())) is not None:
        raise ValueError(wrong)


def deploy_component(plan: HostPlan, component: str) -> None:
    """Add this host's named operations for `component` (none when the host does not have it).

    One call line per action: pyinfra's CLI orders and lines up operations across hosts by their call
    stack, so an action a host lacks leaves the others' places as they are."""
    comp = plan.component(component)
    if comp is None:
        return
    if comp.problems:
        raise ValueError(f"{component} preflight: " + "; ".join(comp.problems))
    _add = cast(Any, apply)  # pyinfra's operation typing does not see `name=` (a global argument)
    if name := op_name(comp, "retire"):
        _add(plan, component, "retire", name=name)
        return
    if name := op_name(comp, "files"):
        _add(plan, component, "files", name=name)
    if (name := op_name(comp, "handler")) and comp.handler == "apt-update":
        _add(plan, component, "handler", name=name)  # the repo's sources, the refresh, then packages
    if name := op_name(comp, "packages"):
        _add(plan, component, "packages", name=name)
    if name := op_name(comp, "hold"):
        _add(plan, component, "hold", name=name)
    if not comp.start_after:
        if name := op_name(comp, "services"):
            _add(plan, component, "services", name=name)
        if name := op_name(comp, "modules"):
            _add(plan, component, "modules", name=name)
        if (name := op_name(comp, "handler")) and comp.handler != "apt-update":
            _add(plan, component, "handler", name=name)
    if comp.wait_master:  # the highest-priority SM node: its OpenSM answers as MASTER before the standbys start
        cast(Any, wait_master)(plan, name=f"{component}: wait for a master SM before the standbys start")
    elif comp.start_after:  # a standby SM node: the same actions, on later lines, so they run after the wait above
        if name := op_name(comp, "services"):
            _add(plan, component, "services", name=f"{name}, after {comp.start_after}'s")
        if name := op_name(comp, "modules"):
            _add(plan, component, "modules", name=name)
        if (name := op_name(comp, "handler")) and comp.handler != "apt-update":
            _add(plan, component, "handler", name=f"{name}, after {comp.start_after}'s")
