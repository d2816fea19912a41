"""Slurm hostlist expressions: `gpu01 gpu02 gpu03 gpu07` -> `gpu[01-03,07]`.

Like Slurm, only a trailing run of digits is a range; zero padding is kept (`gpu09`,
`gpu10` -> `gpu[09-10]`) and names whose padding differs are never merged into one
range (`gpu9`, `gpu010` stay apart), so the expression expands to exactly the input.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_TRAILING = re.compile(r"^(.*?)(\d+)$")


def _split(name: str) -> tuple[str, str]:
    m = _TRAILING.match(name)
    return (m.group(1), m.group(2)) if m else (name, "")


def _joinable(prev: str, cur: str) -> bool:
    """Whether numeric strings `prev` and `cur` (= prev + 1) can share one range."""
    if len(prev) == len(cur):
        return True
    # 9 -> 10 widens without padding; 09 -> 010 would not round-trip
    return not prev.startswith("0") and not cur.startswith("0")


def compress(names: Iterable[str]) -> str:
    """A Slurm hostlist expression for `names` (sorted, duplicates dropped)."""
    unique = sorted(set(names), key=lambda n: (_split(n)[0], int(_split(n)[1] or -1), _split(n)[1]))
    groups: dict[str, list[list[str]]] = {}
    plain: list[str] = []
    order: list[str] = []
    for name in unique:
        prefix, digits = _split(name)
        if not digits:
            plain.append(name)
            order.append(name)
            continue
        ranges = groups.get(prefix)
        if ranges is None:
            groups[prefix] = [[digits, digits]]
            order.append("\0" + prefix)
            continue
        last = ranges[-1]
        if int(digits) == int(last[1]) + 1 and _joinable(last[1], digits):
            last[1] = digits
        else:
            ranges.append([digits, digits])
    parts: list[str] = []
    for item in order:
        if not item.startswith("\0"):
            parts.append(item)
            continue
        prefix = item[1:]
        ranges = groups[prefix]
        if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
            parts.append(prefix + ranges[0][0])
            continue
        body = ",".join(lo if lo == hi else f"{lo}-{hi}" for lo, hi in ranges)
        parts.append(f"{prefix}[{body}]")
    return ",".join(parts)


def expand(expr: str) -> list[str]:
    """Expand an expression written by `compress` (the inverse, for tests and checks)."""
    out: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", expr):
        m = re.fullmatch(r"(.*)\[(.*)\]", part)
        if not m:
            out.append(part)
            continue
        prefix, body = m.groups()
        for rng in body.split(","):
            lo, _, hi = rng.partition("-")
            hi = hi or lo
            for n in range(int(lo), int(hi) + 1):
                out.append(prefix + str(n).rjust(len(lo), "0"))
    return out
