"""Which nodes a `--limit` names: hosts, racks, roles and scalable units (`su01`, `su02`, ...), each
of them also as a hostlist range (`gpu[0001-0512]`, `prod-su01-r[01-04]`, `su[01-04]`).

One definition for `deploy --limit` and `lab up --limit` (and the day-2 verifier, which reads a wave's
`deploy --limit` as the deploy will). A scalable unit is the `group` of the leaf switches a node is
cabled to (`su01` is group 0), so it follows the cabling, not rack names. A range stands for the names
it expands to (util/hostlist.py), each of which must name something, so `gpu[0001-0512]` is exactly
those 512 nodes. Pure: the checked model in, node names out (inventory order).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..model.index import Index
from ..util.echo import echo
from ..util.hostlist import HostlistError, expand, split

_SU = re.compile(r"^su0*(\d+)$")


class SelectionError(ValueError):
    """A `--limit` token that names nothing in the inventory, or a `--limit` that is empty."""


def limit_tokens(given: Sequence[str] | str, option: str = "--limit") -> tuple[str, ...]:
    """The tokens of a host selection as typed (`--limit` given once or more, each comma-separated), for a
    command that was given one: a SelectionError when they are empty (`''`, `','`, `' , '`: an unset
    `$RACK` in a script). Without this, no tokens would read as "every host", and `--limit "$RACK"` would
    deploy, reboot or flash the whole cluster; Ansible's own `--limit ''` matches nothing, and so do we:
    an empty selection is refused, never widened."""
    given = [given] if isinstance(given, str) else list(given)
    tokens = split_tokens(given)
    if not tokens:
        raise SelectionError(f"{option} selects no host: {', '.join(echo(g) for g in given) or echo('')} "
                             "(leave the option out for every host)")
    return tokens


def split_tokens(items: Sequence[str]) -> tuple[str, ...]:
    """`["a,b", "c"]` -> `("a", "b", "c")` (repeatable and comma-separated options); a comma inside a
    range's brackets does not split it: `["gpu[01-03,07],login"]` -> `("gpu[01-03,07]", "login")`."""
    return tuple(t for item in items for t in split(item))


def node_names(index: Index, given: Sequence[str] | str, option: str = "--limit") -> list[str]:
    """The nodes a selection of host names or ranges of them names (validate's and firmware's `--limit`, a
    day-2 wave's), in its order: a SelectionError when it is empty, not a hostlist, or names what is not a node
    (bounded by the inventory's size before any name is built)."""
    tokens = limit_tokens(given, option)
    try:
        hosts = expand(",".join(tokens), limit=len(index.nodes))
    except HostlistError as exc:
        raise SelectionError(f"{option}: {exc}") from None
    unknown = [h for h in hosts if h not in index.nodes]
    if unknown:
        raise SelectionError(f"{option}: not a node of the inventory: {', '.join(unknown[:8])}")
    return hosts


def scalable_units(index: Index) -> dict[str, set[int]]:
    """node -> the scalable units (leaf groups) its HCAs are cabled to."""
    group = {s.name: s.group for s in index.inv.switches if s.group is not None and s.role == "leaf"}
    out: dict[str, set[int]] = {}
    for cable in index.inv.cables:
        for host, other in ((cable.a, cable.b), (cable.b, cable.a)):
            if host.hca is not None and other.device in group:
                out.setdefault(host.device, set()).add(group[other.device])
    return out


def select_nodes(index: Index, limit: Sequence[str]) -> list[str]:
    """Nodes matching any token (node, rack, role or `suNN`, or a range of them), in inventory order;
    all when empty. A token (or a name of a range) that matches no node is a SelectionError naming it."""
    nodes = index.inv.nodes
    if not limit:
        return [n.name for n in nodes]
    names: list[str] = []
    unknown: list[str] = []
    for token in limit:
        if "[" in token or "]" in token:
            try:  # every name of a range must match: more than nodes, racks, roles and units cannot
                names += expand(token, limit=2 * len(nodes) + len(index.racks) + 16)
            except HostlistError as exc:
                raise SelectionError(f"--limit {exc}") from None
        else:
            names.append(token)
    by_key: dict[str, list[str]] = {}
    for n in nodes:
        for key in dict.fromkeys((n.name, n.rack, n.role)):
            by_key.setdefault(key, []).append(n.name)
    units = scalable_units(index) if any(_SU.match(t) for t in names) else {}
    wanted: set[str] = set()
    for token in names:
        su = _SU.match(token)
        if su is not None:
            g = int(su.group(1)) - 1
            found = [n.name for n in nodes if g in units.get(n.name, set())]
        else:
            found = by_key.get(token, [])
        if not found:
            unknown.append(token)
        else:
            wanted.update(found)
    if unknown:
        shown = ", ".join(unknown[:10]) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
        raise SelectionError(f"--limit {shown}: no node, rack, role or scalable unit of that name")
    return [n.name for n in nodes if n.name in wanted]


def default_rehearsal(index: Index) -> list[str]:
    """A selection that rehearses every role: the first rack of GPU nodes, every subnet-manager node
    (an HA pair stays a pair), and one Lustre server (the MGS's when it is named in `mgs_nids`)."""
    inv = index.inv
    picked: set[str] = set()
    gpu_racks = [n.rack for n in inv.nodes
                 if (hw := index.hardware.get(n.name)) is not None and hw.gpus is not None and hw.gpus.count]
    if gpu_racks:
        picked |= {n.name for n in inv.nodes if n.rack == gpu_racks[0]}
    picked |= {n.name for n in inv.nodes if n.role == "subnet-manager"}
    if inv.opensm is not None:
        picked |= {s.node for s in inv.opensm.sm_nodes}
    servers = [s for fs in inv.lustre for s in fs.servers]
    mgs = [nid.split("@", 1)[0] for fs in inv.lustre for nid in fs.mgs_nids]
    first = next((s for s in mgs if s in servers), servers[0] if servers else None)
    if first is None:
        first = next((n.name for n in inv.nodes if n.role == "storage"), None)
    if first is not None:
        picked.add(first)
    # every other role present once (a login or service node the deploy treats differently)
    for role in dict.fromkeys(n.role for n in inv.nodes):
        if not any(index.nodes[p].role == role for p in picked):
            picked.add(next(n.name for n in inv.nodes if n.role == role))
    return [n.name for n in inv.nodes if n.name in picked]
