"""Which hosts a new inventory changes, component by component, and which changes disrupt jobs. Pure.

Both inventories go through the deploy's own desired state (`deploy.desired.host_plans`,
the files and package pins each host gets), so a change shows here exactly when a deploy
would make it: a node added to the fabric changes `/etc/hosts` on every host, a new
NCCL pin changes the `nccl` component of the GPU nodes, an edited OpenSM setting the
`opensm` component of the subnet-manager nodes.

A host must be drained first when the change interrupts what runs on it: a new GPU
driver (it reboots), a new OFED (openibd restarts the InfiniBand stack), a new Lustre
client or LNet configuration (the file system is remounted), new IPoIB addresses (the
interfaces are re-applied). Everything else (NCCL, /etc/hosts, apt sources, time sync,
OpenSM files, which the subnet manager re-reads) is applied in place.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..deploy.component import Component, HostPlan, ManagedFile
from ..deploy.desired import host_plans, rendered_by_host
from ..deploy.options import DeployOptions, Mirror, mirrors_of_inventory
from ..model.index import Index
from ..render import FileSpec, render_text
from .inventory_diff import InventoryDiff

Rendered = tuple[dict[str, list[tuple[str, FileSpec]]], FileSpec | None]  # deploy.desired.rendered_by_host

LEAVES = "it leaves"  # the drain reason of a host the new inventory no longer has

_DISRUPTIVE_PINS = {
    "nvidia": "new GPU driver (reboot)",
    "ofed": "new DOCA/MLNX OFED (InfiniBand stack restart)",
    "lustre": "new Lustre client (file system remount)",
}
_DISRUPTIVE_FILES = {
    "lustre": "new LNet configuration (file system remount)",
    "ipoib": "new IPoIB configuration (interfaces re-applied)",
}


@dataclass(frozen=True, slots=True)
class ComponentChange:
    component: str
    files: tuple[str, ...] = ()  # `~/etc/nccl.conf` changed, `+...` added, `-...` removed
    pins: tuple[str, ...] = ()  # `nvidia-driver-550: 550.54.15-1 -> 550.90.07-1` (`+`/`-` when added/removed)
    other: tuple[str, ...] = ()  # packages, services, kernel modules added or removed

    def __str__(self) -> str:
        parts = [*self.files, *self.pins, *self.other]
        return f"{self.component}: {', '.join(parts)}" if parts else self.component


@dataclass(frozen=True, slots=True)
class HostChange:
    host: str
    rack: str
    change: str  # `added`, `removed`, `changed`
    components: tuple[ComponentChange, ...]
    disruptive: tuple[str, ...]  # why the host must be drained first (empty: applied in place)
    reboot: bool

    @property
    def component_names(self) -> tuple[str, ...]:
        return tuple(c.component for c in self.components)


def left_behind(h: HostChange) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """What the new inventory drops from a host it keeps, which a deploy leaves in place (it converges what is
    desired and takes nothing away): (services, files, pinned packages), each no component of the host has
    any more (a file or service that moves from one component to another is not dropped)."""
    if h.change != "changed":
        return (), (), ()

    def dropped(items: list[str]) -> tuple[str, ...]:
        kept = {x[1:] for x in items if x[:1] in "+~"}
        return tuple(dict.fromkeys(x[1:] for x in items if x.startswith("-") and x[1:] not in kept))

    services = dropped([x[0] + x[len("-service "):] for c in h.components for x in c.other
                        if x[1:].startswith("service ")])
    files = dropped([x for c in h.components for x in c.files])
    pins = dropped([x.split(" ", 1)[0] if x[:1] in "+-" else "~" + x.split(":", 1)[0]
                    for c in h.components for x in c.pins])
    return services, files, pins


def desired(index: Index, env_name: str, rendered: Rendered | None = None) -> dict[str, HostPlan]:
    """Every host's desired state, as a deploy computes it (no secrets: credentials are not compared)."""
    opts = DeployOptions(env_name, repo=Mirror.of_inventory(index.inv), mirrors=mirrors_of_inventory(index.inv))
    return host_plans(index, opts, render=False, rendered=rendered)


def diff_hosts(old: Index, new: Index, env_name: str, diff: InventoryDiff | None = None) -> list[HostChange]:
    """Hosts whose desired state differs, in the new inventory's node order (removed hosts last).

    When nothing the rendered host files are built from differs (`same_host_file_inputs`: a pin bump, a
    rack's cooling, nodes moved between slots), the old side's file specs serve both sides: built once,
    and equal by construction."""
    if same_host_file_inputs(old, new, diff):
        shared = rendered_by_host(old)
        before, after = desired(old, env_name, shared), desired(new, env_name, shared)
    else:
        before, after = desired(old, env_name), desired(new, env_name)
    memo: dict[tuple[int, int], ComponentChange] = {}  # components shared by many hosts: compared once
    texts: dict[tuple[str, int], str] = {}  # files rendered to compare them, by template and context
    out: list[HostChange] = []
    for name, plan in after.items():
        prev = before.get(name)
        if prev is None:
            comps = tuple(_component_diff(None, c) for c in plan.components)
            out.append(HostChange(name, plan.rack, "added", comps, (), False))
            continue
        comps = _components_diff(prev, plan, memo, texts)
        if comps:
            reasons = tuple(dict.fromkeys(r for c in comps if (r := _disruption(c))))
            reboot = any(c.component == "nvidia" and c.pins for c in comps)
            out.append(HostChange(name, plan.rack, "changed", comps, reasons, reboot))
    for name, prev in before.items():
        if name not in after:
            out.append(HostChange(name, prev.rack, "removed", (), (LEAVES,), False))
    return out


# Inventory sections the host-file builders (render HOST_BUILDERS: OpenSM, hosts/NCCL/IPoIB, Lustre) never
# read: a change confined to them leaves every rendered host file as it was. Every other section is compared.
_NOT_IN_HOST_FILES = frozenset({"site", "racks", "software", "patch_panels", "trunks", "prices", "deploy",
                                "monitoring", "firmware"})
_NODE_PLACE = frozenset({"rack", "u"})  # where a node stands: no host file names it
_ENDS_CHANGE = frozenset({"added", "removed", "moved"})  # cable changes that change which ports are cabled


def same_host_file_inputs(old: Index, new: Index, diff: InventoryDiff | None = None) -> bool:
    """Whether every input of the rendered host files is equal on both sides, so they render alike:
    every inventory section but those no host file reads, the nodes (in order) but where they stand, and
    which ports are cabled (the only thing host files take from the cables: OpenSM lists cabled ports).
    `diff`, when given, answers the last without comparing the cables again."""
    a, b = old.inv, new.inv
    for name in type(a).model_fields:
        if name not in _NOT_IN_HOST_FILES and name not in ("nodes", "cables") and getattr(a, name) != getattr(b, name):
            return False
    if len(a.nodes) != len(b.nodes):
        return False
    fields = [f for f in type(a.nodes[0]).model_fields if f not in _NODE_PLACE] if a.nodes else []
    for x, y in zip(a.nodes, b.nodes, strict=True):
        if x is not y and any(getattr(x, f) != getattr(y, f) for f in fields):
            return False
    if diff is not None:
        return not any(c.change in _ENDS_CHANGE for c in diff.cables)
    return set(old.cable_at) == set(new.cable_at)


def _components_diff(before: HostPlan, after: HostPlan, memo: dict[tuple[int, int], ComponentChange],
                     texts: dict[tuple[str, int], str]) -> tuple[ComponentChange, ...]:
    was = {c.name: c for c in before.components}
    now = {c.name: c for c in after.components}
    out = []
    for name in dict.fromkeys([*now, *was]):
        # (comparing the components whole would compare every file's template context too)
        a, b = was.get(name), now.get(name)
        key = (id(a), id(b))
        change = memo.get(key) if a is not None and b is not None else None
        if change is None:
            change = _component_diff(a, b, texts)
            if a is not None and b is not None:
                memo[key] = change
        if change.files or change.pins or change.other:
            out.append(change)
    return tuple(out)


def _component_diff(a: Component | None, b: Component | None,
                    texts: dict[tuple[str, int], str] | None = None) -> ComponentChange:
    either = b or a
    assert either is not None
    name = either.name
    fa = {f.dest: f for f in a.files} if a else {}
    fb = {f.dest: f for f in b.files} if b else {}
    files = [f"+{d}" for d in fb if d not in fa]
    texts = {} if texts is None else texts
    files += [f"~{d}" for d in fb if d in fa and _differs(fa[d], fb[d], texts)]
    files += [f"-{d}" for d in fa if d not in fb]
    pa = {p.package: p.version for p in a.pins} if a else {}
    pb = {p.package: p.version for p in b.pins} if b else {}
    pins = [f"+{p} {v}" for p, v in pb.items() if p not in pa]
    pins += [f"{p}: {pa[p]} -> {v}" for p, v in pb.items() if p in pa and pa[p] != v]
    pins += [f"-{p} {v}" for p, v in pa.items() if p not in pb]
    other: list[str] = []
    for label, xa, xb in (("package", a.packages if a else (), b.packages if b else ()),
                          ("service", a.services if a else (), b.services if b else ()),
                          ("module", a.modules if a else (), b.modules if b else ())):
        other += [f"+{label} {x}" for x in xb if x not in xa] + [f"-{label} {x}" for x in xa if x not in xb]
    return ComponentChange(name, tuple(files), tuple(pins), tuple(other))


def _differs(a: ManagedFile, b: ManagedFile, texts: dict[tuple[str, int], str] | None = None) -> bool:
    """Whether a deploy would rewrite the file: its mode or its text differs. Host files come unrendered
    (`host_plans(render=False)`): the same template with the same context renders the same text, so
    only files whose context differs are rendered, and compared as text."""
    if a.mode != b.mode:
        return True
    if a.content or b.content or not (a.template and b.template):
        return a.content != b.content
    if a.template == b.template and (a.context is b.context or a.context == b.context):
        return False
    texts = {} if texts is None else texts
    return _text(a, texts) != _text(b, texts)


def _text(f: ManagedFile, texts: dict[tuple[str, int], str]) -> str:
    # one render per context in a diff: the subnet managers share OpenSM's GUID tables (one context
    # object, alive while the diff runs, so its id is not reused)
    key = (f.template, id(f.context))
    text = texts.get(key)
    if text is None:
        text = texts[key] = render_text(f.template, f.context)
    return text


def _disruption(c: ComponentChange) -> str:
    if c.pins and c.component in _DISRUPTIVE_PINS:
        return _DISRUPTIVE_PINS[c.component]
    if c.files and c.component in _DISRUPTIVE_FILES:
        return _DISRUPTIVE_FILES[c.component]
    return ""
