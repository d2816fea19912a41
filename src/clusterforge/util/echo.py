"""Text from outside (a path, an inventory value, a tool's output) as it is echoed: in a message, bounded;
in a rendered file, on one line.

Stdlib only: the declared-fabric fast path (validate/quick.py) and the parsers use it.
"""

from __future__ import annotations

MAX_ECHO = 80
"""The most characters of a value quoted in a message (the cut value ends in `...`)."""

MAX_MESSAGE = 2000
"""The most characters of one message (an error, a finding's expected/observed text) in text or JSON:
past it the middle is cut and says how much (`... [N characters cut] ...`)."""


def echo(value: object, limit: int = MAX_ECHO) -> str:
    """`value` as a message quotes it: ``repr``, cut to `limit` characters (what capture errors always quoted).

    An integer too long to print (Python refuses past 4,300 digits, and converting one costs time quadratic
    in its length) is described by its size instead."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 1000:
        return f"<an integer of about {int(value.bit_length() * 0.30103):,} digits>"
    if isinstance(value, str):
        return repr(clip(value, limit))
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def clip(value: str, limit: int = MAX_ECHO) -> str:
    """`value` cut to `limit` characters, `...` marking a cut (a raw line kept in JSON: `observed`)."""
    return value if len(value) <= limit else value[:limit] + "..."


def cap(text: str, limit: int = MAX_MESSAGE) -> str:
    """`text`, or its head and tail with the middle cut when it is longer than `limit` characters."""
    if len(text) <= limit:
        return text
    keep = max(limit - 40, 2)
    head, tail = text[: keep * 3 // 4], text[len(text) - keep // 4:]
    return f"{head}... [{len(text) - len(head) - len(tail)} characters cut] ...{tail}"


def one_line(text: str) -> str:
    """`text` with every character that is not printable (line breaks, tabs, C0/C1 controls, U+2028/2029)
    written as its escape (`\\n`, `\\x1b`, `\\u2028`): text from a path that goes into a rendered file can add
    no line to it. Idempotent (an escape is printable)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
