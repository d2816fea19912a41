"""What should be on each host: pure functions from the checked model to `HostPlan`s.

Rendered files come from `render.host_file_specs` (the single source of truth for both
engines); the few deploy-only files (apt sources and pins, RDMA limits, time sync,
modules-load) come from templates under templates/ through the same Jinja environment.
Nothing here touches a host.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from ..catalog.compat import lustre_ofed_problem
from ..model.index import Index
from ..render import FileSpec, file_context, file_mode, host_file_specs, plane_services, render_text
from .component import Component, HostPlan, ManagedFile
from .firewall import firewall_component
from .healthcheck import healthcheck_components
from .monitoring import monitoring_components
from .options import DeployOptions, DnfRepo, Mirror
from .os_target import OsTarget, os_target
from .packages import Pin, lemur_pins, lustre_pins, module_streams, nccl_pins, nvidia_pins, ofed_pins

COMPONENTS = ("repo", "base", "ofed", "nvidia", "nccl", "lustre", "ipoib", "hsm", "opensm", "monitoring",
              "healthcheck", "firewall")
HOSTS_FRAGMENT = "network/hosts"
HOSTS_MARKER = "# {mark} clusterforge managed block"

EXECUTABLE = frozenset({"lustre-server/cf-lustre-format.py.j2"})
"""Templates of programs (mode 0755)."""

LNET_UNIT = "lnet"
"""Lustre's unit that loads and configures LNet from /etc/lnet.conf, on every Lustre client."""

HSM_UNIT = "lhsmd"
"""Lemur's HSM agent on an archive's agent nodes: its configuration files restart it when they change."""

HSM_TEMPLATES = frozenset({"lustre-tiers/lhsmd-agent.j2", "lustre-tiers/lhsm-plugin-s3.j2",
                           "lustre-tiers/lhsmd.service.j2", "lustre-tiers/lhsmd-dropin.conf.j2"})
"""The archive tier's files: the `hsm` component's, not the `lustre` component's."""

_TEMPLATE_COMPONENT = {"nccl": "nccl", "ipoib": "ipoib", "lustre": "lustre", "lustre-server": "lustre",
                       "lustre-tiers": "lustre", "opensm": "opensm"}


def _dest(options: DeployOptions, path: str) -> str:
    root = options.root.rstrip("/")
    return f"{root}{path}"


def _file(options: DeployOptions, dest: str, template: str, context: Mapping[str, Any], *,
          mode: int = 0o644, secret: bool = False, block: bool = False) -> ManagedFile:
    full = file_context(context, options.env_name)
    text = render_text(template, full)
    return ManagedFile(_dest(options, dest), template, full, text, mode, secret, block)


def rendered_by_host(index: Index) -> tuple[dict[str, list[tuple[str, FileSpec]]], FileSpec | None]:
    """node -> [(absolute destination, spec)] from the render, plus the /etc/hosts fragment."""
    out: dict[str, list[tuple[str, FileSpec]]] = {}
    hosts_spec = None
    for spec in host_file_specs(index):
        if spec.path == HOSTS_FRAGMENT:
            hosts_spec = spec
        elif spec.host and spec.dest:  # a node's own file, where its builder says it goes
            out.setdefault(spec.host, []).append((spec.dest, spec))
    return out, hosts_spec


def host_plans(index: Index, options: DeployOptions, *, render: bool = True,
               rendered: tuple[dict[str, list[tuple[str, FileSpec]]], FileSpec | None] | None = None,
               ) -> dict[str, HostPlan]:
    """Every node's plan, in inventory order. `render=False` leaves each host's rendered files' content
    empty (template and context are there): day-2 compares contexts and renders only those that differ.
    `rendered`: `rendered_by_host(index)`, when the caller has it (day-2 shares one side's with the other
    when nothing the host files are built from differs)."""
    inv = index.inv
    by_host, hosts_spec = rendered if rendered is not None else rendered_by_host(index)
    addresses = _mgmt_addresses(index)
    sm_nodes = {sm.node for sm in inv.opensm.sm_nodes} if inv.opensm else set()
    # two SM nodes or more: the highest priority (strictly highest: a check rule) is started first
    top_sm = max(inv.opensm.sm_nodes, key=lambda sm: sm.priority).node if len(sm_nodes) > 1 and inv.opensm else ""
    plans: dict[str, HostPlan] = {}
    # the same for every node (or for every node alike): built once, not once per node. /etc/hosts
    # lists every node, so rendering it per node was quadratic (2,048 nodes: 90 s)
    base = _base(index, options, hosts_spec)
    ofed_for: dict[tuple[bool, str], Component | None] = {}
    nvidia_for: dict[tuple[bool, str], Component | None] = {}
    repo_for: dict[tuple[tuple[Pin, ...], str], Component | None] = {}
    extra = file_context({}, options.env_name)
    kind_of: dict[tuple[str, str], tuple[str, int, str]] = {}  # (dest, template) -> component, mode, full dest
    contexts: dict[int, dict[str, Any]] = {}
    pins_of: dict[str, tuple[Pin, ...]] = {}  # the same for every host: computed once
    monitoring = monitoring_components(index, options, render=render)
    healthcheck = healthcheck_components(index, options, render=render)
    targets: dict[str, OsTarget] = {}
    for node in inv.nodes:
        files: dict[str, list[ManagedFile]] = {}
        for dest, spec in by_host.get(node.name, []):
            kind = kind_of.get((dest, spec.template))
            if kind is None:
                kind = kind_of[(dest, spec.template)] = (
                    "hsm" if spec.template in HSM_TEMPLATES
                    else _TEMPLATE_COMPONENT.get(spec.template.split("/", 1)[0], "base"),
                    0o755 if spec.template in EXECUTABLE else file_mode(dest.lstrip("/")), _dest(options, dest))
            comp, mode, full = kind
            context = contexts.get(id(spec))  # a spec several hosts get (OpenSM's shared files): one context
            if context is None:
                context = contexts[id(spec)] = {**spec.context, **extra}
            text = render_text(spec.template, context) if render else ""
            files.setdefault(comp, []).append(ManagedFile(full, spec.template, context, text, mode))
        hw = index.hardware[node.name]
        if hw.os not in targets:
            targets[hw.os] = os_target(hw.os)
        target = targets[hw.os]
        family = target.family  # the package names (catalog/os.yaml) and how they are installed and held
        has_gpus = hw.gpus is not None and hw.gpus.count > 0
        nvswitch = has_gpus and hw.gpus is not None and hw.gpus.nvlink_topology == "nvswitch"
        if (has_gpus, family) not in ofed_for:
            ofed_for[(has_gpus, family)] = _ofed(index, options, has_gpus, family)
        if (nvswitch, family) not in nvidia_for:
            nvidia_for[(nvswitch, family)] = _nvidia(index, nvswitch, family)
        ofed = ofed_for[(has_gpus, family)] if hw.hcas else None
        nvidia = nvidia_for[(nvswitch, family)] if has_gpus else None
        comp_list = [base, ofed, nvidia, _nccl(index, files.get("nccl", []), pins_of, family),
                     _lustre(index, files.get("lustre", []), pins_of, node.name, family),
                     _ipoib(files.get("ipoib", [])), _hsm(index, files.get("hsm", []), pins_of),
                     _opensm(files.get("opensm", []), node.name in sm_nodes, top_sm, node.name),
                     monitoring.get(node.name), healthcheck.get(node.name)]
        comps = [c for c in comp_list if c is not None]
        pins = tuple(p for c in comps for p in c.pins)
        if (pins, family) not in repo_for:
            repo_for[(pins, family)] = _repo(options, list(pins), target)
        repo = repo_for[(pins, family)]
        if repo is not None:
            comps.insert(0, repo)
        if target.package_manager != "apt":  # every component's packages through the host's own manager
            comps = [replace(c, package_manager=target.package_manager) for c in comps]
        fam = index.cat.os.families[family]
        if fam.selinux:  # what the deploy writes gets its SELinux context
            comps = [replace(c, selinux=True) for c in comps]
        pending = fam.not_deployed
        if pending:  # a component this family does not get yet fails its preflight, saying why
            comps = [replace(c, problems=(*c.problems, f"not deployed on {target.release} yet: {pending[c.name]}"))
                     if c.name in pending else c for c in comps]
        if fam.firewall:  # firewalld opens what the host's components listen on (all of them, selected or not)
            wall = firewall_component(comps, options.env_name, options.root, render=render)
            comps.append(replace(wall, package_manager=target.package_manager, selinux=fam.selinux))
        # a selected component that listens brings the firewall with it: its port is not left closed
        listening = any(c.ports for c in comps if options.components is None or c.name in options.components)
        selected = [c for c in comps if options.components is None or c.name in options.components
                    or (c.name == "firewall" and listening)]
        plans[node.name] = HostPlan(node.name, addresses.get(node.name, node.name), node.rack, node.role,
                                    tuple(selected), inv.deploy.reboot, target)
    return plans


def _mgmt_addresses(index: Index) -> dict[str, str]:

    addrs = index.addresses
    return {name: addrs.text(ip) for name, ip in addrs.mgmt.items()}


DNF_REPO_FILE = "/etc/yum.repos.d/clusterforge.repo"


def _repo(options: DeployOptions, pins: list[Pin], target: OsTarget) -> Component | None:
    """Where the pins come from and how they stay: apt's source list and preferences (Pin-Priority 1001), or a
    dnf `.repo` file (the versionlock plugin holds the versions: pkgmgr.py). The handler refreshes the lists."""
    if not pins:
        return None
    source = options.source_for(target.family, target.package_manager)
    if target.package_manager == "dnf":
        dnf = [_file(options, DNF_REPO_FILE, "dnf/clusterforge.repo.j2",
                     {"repos": [{"id": "clusterforge", "url": source.url, "gpgcheck": int(source.gpgcheck),
                                 "gpgkey": source.gpgkey}]})] if isinstance(source, DnfRepo) else []
        return Component("repo", tuple(dnf), handler="apt-update", package_manager="dnf")
    files = [_file(options, "/etc/apt/preferences.d/clusterforge.pref", "apt/preferences.j2",
                   {"pins": [{"package": p.package, "version": p.version} for p in sorted(pins)]})]
    mirror = source if isinstance(source, Mirror) else None
    if mirror is not None:
        opts = f"[{mirror.options}] " if mirror.options else ""
        files.append(_file(options, "/etc/apt/sources.list.d/clusterforge.list", "apt/sources.list.j2",
                           {"repos": [{"url": mirror.url, "suite": mirror.suite, "options": opts,
                                       "components": " ".join(mirror.components)}]}))
    if options.repo_auth is not None:
        files.append(ManagedFile(_dest(options, "/etc/apt/auth.conf.d/clusterforge.conf"), "", {},
                                 options.repo_auth, 0o600, secret=True))
    return Component("repo", tuple(files), handler="apt-update")


def _base(index: Index, options: DeployOptions, hosts_spec: FileSpec | None) -> Component:
    files = [_file(options, "/etc/security/limits.d/90-clusterforge-rdma.conf", "base/rdma-limits.conf.j2",
                   {"limits": [{"domain": "*", "type": t, "item": "memlock", "value": "unlimited"}
                               for t in ("soft", "hard")]})]
    mgmt = index.inv.addressing.management
    if mgmt is not None and mgmt.gateway is not None:
        files.append(_file(options, "/etc/systemd/timesyncd.conf.d/60-clusterforge.conf",
                           "base/timesyncd.conf.j2", {"servers": [str(mgmt.gateway)]}))
    if hosts_spec is not None:
        ctx = file_context(hosts_spec.context, options.env_name)
        text = render_text(hosts_spec.template, ctx)
        files.append(ManagedFile(_dest(options, "/etc/hosts"), hosts_spec.template, ctx, text, 0o644, block=True))
    return Component("base", tuple(files), handler="timesync-restart")


def _ofed(index: Index, options: DeployOptions, gpus: bool, family: str) -> Component | None:
    sw = index.inv.software
    if sw.doca_ofed is None:
        return None
    modules = ("nvidia-peermem",) if sw.nvidia_driver and gpus else ()
    files = [_file(options, "/etc/modules-load.d/nvidia-peermem.conf", "ofed/modules-load.conf.j2",
                   {"modules": list(modules)})] if modules else []
    return Component("ofed", tuple(files), tuple(ofed_pins(sw, family)), services=("openibd",), modules=modules)


def _nvidia(index: Index, nvswitch: bool, family: str) -> Component | None:
    sw = index.inv.software
    if sw.nvidia_driver is None:
        return None
    services = ("nvidia-persistenced", "nvidia-fabricmanager") if nvswitch else ("nvidia-persistenced",)
    branch = sw.nvidia_driver.split(".", 1)[0]
    return Component("nvidia", pins=tuple(nvidia_pins(sw, nvswitch, family)), services=services,
                     streams=module_streams("nvidia", family=family, branch=branch))


def _nccl(index: Index, files: list[ManagedFile], pins_of: dict[str, tuple[Pin, ...]],
          family: str) -> Component | None:
    if not files:
        return None
    pins = _pins(pins_of, f"nccl:{family}", lambda: tuple(nccl_pins(index.inv.software, family)))
    return Component("nccl", tuple(files), pins)


def _lustre(index: Index, files: list[ManagedFile], pins_of: dict[str, tuple[Pin, ...]],
            node: str, family: str) -> Component | None:
    if not files:
        return None
    sw = index.inv.software
    mounts = tuple(f.dest.rsplit("/", 1)[1] for f in files if f.template == "lustre/lustre.mount.j2")
    # a client mounts; an HSM agent that does not serve the file system needs the client too (lhsmd mounts it)
    client = bool(mounts) or any(fs.hsm_agent(node) and node not in fs.servers for fs in index.inv.lustre)
    problem = lustre_ofed_problem(sw.doca_ofed, sw.lustre_client) if client else None
    # a client's LNet comes up through Lustre's own lnet.service (lustre-client-utils: `lnetctl import
    # /etc/lnet.conf`), started before its mount units (ordered After=lnet.service). Everything else is files
    # only, started by the site: the cache's units once its local file system exists (the prod lab's deploy
    # failed every GPU node starting them on a device that was not there), a target's mount (the HA manager),
    # the format step (a person, on purpose). The HSM agent is the `hsm` component's. Servers' Lustre packages
    # are not deployed here.
    units = (LNET_UNIT, *mounts) if client else ()
    pins = _pins(pins_of, f"lustre:{family}", lambda: tuple(lustre_pins(sw, family))) if client else ()
    return Component("lustre", tuple(files), pins, services=units,
                     handler="systemd-reload", problems=(problem,) if problem else ())


def _hsm(index: Index, files: list[ManagedFile], pins_of: dict[str, tuple[Pin, ...]]) -> Component | None:
    """The archive's copytool on an agent node: Lemur's packages, lhsmd's configuration and unit, lhsmd enabled
    and started (after LNet: the `lustre` component starts it first), and restarted when one of its files
    changes (lhsmd reads its configuration when it starts)."""
    if not files:
        return None
    pins = _pins(pins_of, "hsm", lambda: tuple(lemur_pins(index.inv.software)))
    return Component("hsm", tuple(replace(f, unit=HSM_UNIT) for f in files), pins, services=(HSM_UNIT,),
                     handler="units")


def _pins(memo: dict[str, tuple[Pin, ...]], key: str, make: Callable[[], tuple[Pin, ...]]) -> tuple[Pin, ...]:
    """The pins under `key`, made once per host_plans call (the same for every host)."""
    if key not in memo:
        memo[key] = make()
    return memo[key]


def _ipoib(files: list[ManagedFile]) -> Component | None:
    return Component("ipoib", tuple(files), handler="netplan-apply") if files else None


def _opensm(files: list[ManagedFile], is_sm: bool, top: str, node: str) -> Component | None:
    """OpenSM on an SM node. `top`: the highest-priority SM node when there are two or more (else ""): the
    deploy starts its OpenSM first and waits for a MASTER, then the others' (start_after), on both engines,
    so the SM meant to be master wins (OpenSM hands mastership to a higher priority only on a heavy sweep)."""
    if not is_sm or not files:
        return None
    # rail planes: one opensm-plane@<P> instance per plane (its unit and /etc/opensm/plane<P>/ among the files)
    return Component("opensm", tuple(files), packages=("opensm",), services=plane_services([f.dest for f in files]),
                     handler="opensm-resweep", start_after=top if top and top != node else "",
                     wait_master=bool(top) and top == node)


def merge_block(current: str, fragment: str, marker: str = HOSTS_MARKER) -> str:
    """`current` with our marked block replaced (or appended): what Ansible's blockinfile writes."""
    begin, end = marker.format(mark="BEGIN"), marker.format(mark="END")
    lines = current.splitlines()
    if begin in lines and end in lines[lines.index(begin):]:
        start = lines.index(begin)
        stop = start + lines[start:].index(end)
        kept_before, kept_after = lines[:start], lines[stop + 1:]
    else:
        kept_before, kept_after = lines, []
    block = [begin, *fragment.rstrip("\n").split("\n"), end]
    return "\n".join([*kept_before, *block, *kept_after]) + "\n"
