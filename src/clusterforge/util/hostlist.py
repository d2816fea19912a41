"""Slurm hostlist expressions: `gpu01 gpu02 gpu03 gpu07` -> `gpu[01-03,07]`, and back.

Like Slurm, only a trailing run of digits is a range; zero padding is kept (`gpu09`,
`gpu10` -> `gpu[09-10]`) and names whose padding differs are never merged into one
range (`gpu9`, `gpu010` stay apart), so the expression expands to exactly the input.
Topology files (render), `--limit` selections (inventory/selection.py) and the day-2 plan's
wave-wide `deploy --limit` (day2/changeplan.py) write and read them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .echo import echo

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


_PART = re.compile(r"([^\[\],]*)\[([0-9,\-]+)\]([^\[\],]*)")
_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?")


class HostlistError(ValueError):
    """Text that is not a hostlist expression, or one that names more than allowed."""


MAX_NAMES = 100_000
"""The most names one expression may stand for when its caller names no tighter bound (a selection's bound is
what the inventory could match): counted from the ranges before any name is built, so `gpu[0-999999999]` is
refused at once instead of filling memory."""


def _padded(digits: str) -> bool:
    return len(digits) > 1 and digits.startswith("0")


def split(expr: str) -> list[str]:
    """The top-level parts of a comma-separated list whose parts may hold bracketed ranges:
    `gpu[01-03,07],login` -> `["gpu[01-03,07]", "login"]`. Empty parts are dropped."""
    parts: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(expr):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            parts.append(expr[start:i])
            start = i + 1
    parts.append(expr[start:])
    return [p.strip() for p in parts if p.strip()]


def expand(expr: str, limit: int | None = None) -> list[str]:
    """The names an expression stands for, in its order (the inverse of `compress`). A part is a
    plain name or `PREFIX[RANGES]SUFFIX` (ranges `lo` or `lo-hi`, comma-separated; a range keeps `lo`'s
    zero padding; one bracket a part: `prod-su[01-04]-r01`). HostlistError on anything else (an
    unbalanced bracket, nested or empty brackets, `hi` below `lo`, ends padded differently as in `[01-100]`,
    two brackets), or when it would name more than `limit` names (MAX_NAMES when None; counted before any is
    built)."""
    out: list[str] = []
    total = 0
    bound = MAX_NAMES if limit is None else limit
    parsed: list[tuple[str, list[tuple[str, int, int]], str]] = []
    for part in split(expr):
        if "[" not in part and "]" not in part:
            parsed.append((part, [], ""))
            total += 1
        else:
            m = _PART.fullmatch(part)
            if m is None:
                why = ("nested brackets" if re.search(r"\[[^\]]*\[", part) else
                       "an empty range" if "[]" in part else
                       "two ranges in one name (a hostlist ranges one run of digits)" if part.count("[") > 1 else
                       "not a host range")
                raise HostlistError(f"{echo(part)}: {why} (write PREFIX[LO-HI,...], e.g. gpu[0001-0512])")
            ranges = []
            for rng in m.group(2).split(","):
                r = _RANGE.fullmatch(rng)
                if r is None:
                    raise HostlistError(f"{echo(part)}: {echo(rng)} is not a number or a range LO-HI")
                lo_text, hi_text = r.group(1), r.group(2) or r.group(1)
                if len(lo_text) > 18 or len(hi_text) > 18:
                    raise HostlistError(f"{echo(part)}: {echo(rng)} is not a host number (more than 18 digits)")
                lo, hi = int(lo_text), int(hi_text)
                if hi < lo:
                    raise HostlistError(f"{echo(part)}: range {rng} runs backwards (write {hi_text}-{lo_text})")
                if len(lo_text) != len(hi_text) and (_padded(lo_text) or _padded(hi_text)):
                    raise HostlistError(f"{echo(part)}: range {rng} is padded differently at its ends (write both "
                                        f"with {max(len(lo_text), len(hi_text))} digits, or neither padded)")
                ranges.append((r.group(1), lo, hi))
                total += hi - lo + 1
            parsed.append((m.group(1), ranges, m.group(3)))
        if total > bound:
            raise HostlistError(f"{echo(expr)} names more than {bound:,} hosts")
    for prefix, ranges, suffix in parsed:
        if not ranges:
            out.append(prefix)
        for lo_text, lo, hi in ranges:
            width = len(lo_text)
            out.extend(prefix + str(n).rjust(width, "0") + suffix for n in range(lo, hi + 1))
    return out
