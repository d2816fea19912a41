"""Host names folded into the node-set text HPC admins read and type: `gpu[0001-2048]`, `sm[01-02]`,
`leaf-su[01-02]-r[0-1]`, through ClusterShell's NodeSet (the library behind `clush` and `nodeset`), so what a
deploy prints pastes into `clush -w`, `nodeset -e` or `pdsh -w` as it is.

ClusterShell reads its input as node-set syntax (`[`, `,`, `!`, `&`, `^`, `@group`), and no group source is
consulted here (`RESOLVER_NOGROUP`: no /etc/clustershell file is read). A name ClusterShell would read as
syntax (anything but letters, digits and `._-`, or a leading `-`) is never given to it: it follows the folded
part as its one-line escape, unfolded. Inventory names (`model.base.Name`) never are such names.

Slurm's configuration files and hooks keep their own folding (`util/hostlist.py`): Slurm's hostlist grammar ranges
only a trailing run of digits, which ClusterShell does not promise (docs/deploy.md, "The output").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .echo import echo, one_line
from .hostlist import MAX_NAMES

_PLAIN = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.-]*")


def fold(names: Iterable[str]) -> str:
    """The node set of `names` (duplicates dropped, sorted as ClusterShell sorts): `gpu[0001-2048]`."""
    from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet

    unique = set(names)
    plain = sorted(n for n in unique if _PLAIN.fullmatch(n))
    odd = sorted(n for n in unique if not _PLAIN.fullmatch(n))
    parts = []
    if plain:
        nodes = NodeSet(resolver=RESOLVER_NOGROUP)
        nodes.updaten(plain)
        parts.append(str(nodes))
    return ",".join(parts + [one_line(n) for n in odd])


_BRACKET = re.compile(r"\[([^\[\]]*)\]")
_SPAN = re.compile(r"^\s*(\d{1,18})(?:-(\d{1,18}))?(?:/(\d{1,18}))?\s*$")


def size(text: str) -> int:
    """How many names a node set stands for, from its ranges alone (nothing is built): a part's brackets
    multiply (`a[1-2]b[1-3]` is 6). ValueError on a range this cannot read (ClusterShell would say why)."""
    from .hostlist import split

    total = 0
    for part in split(text):
        count = 1
        for body in _BRACKET.findall(part):
            spans = 0
            for rng in body.split(","):
                m = _SPAN.match(rng)
                if m is None:
                    raise ValueError(f"{echo(rng)} is not a range")
                lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
                spans += (hi - lo) // max(1, int(m.group(3) or 1)) + 1 if hi >= lo else 0
            count *= spans
        total += count
    return total


def expand(text: str, limit: int = MAX_NAMES) -> list[str]:
    """Every name of a node set written by `fold` from plain names (tests and checks): `nodeset -e`. A set
    of more than `limit` names is a ValueError before ClusterShell builds one (it would hold them all)."""
    from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet

    if not text:
        return []
    if size(text) > limit:
        raise ValueError(f"{echo(text)} names more than {limit:,} hosts")
    return list(NodeSet(text, resolver=RESOLVER_NOGROUP))
