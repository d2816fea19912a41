"""Inventory file text before it is parsed: strict UTF-8, a size cap and an alias-expansion bound.

Each guard answers with the InventoryIssue that names the file (and line:col where there is
one) instead of a traceback or an unbounded parse; `load.read_environment` calls them in turn.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from ..util.errors import InventoryIssue

YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""PyYAML's C loader where it is built, else the pure-Python one."""

MAX_FILE_BYTES = 256 * 1024 * 1024
"""An inventory file larger than this is refused before it is read (the largest real ones are ~10 MB)."""


def read_text(file: Path) -> str | InventoryIssue:
    """A file's text as strict UTF-8, or the issue that names why not (unreadable, not UTF-8, too big)."""
    try:
        with file.open("rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return InventoryIssue((), f"cannot read the file: {exc.strerror or exc}", str(file), rule="INV-READ")
    if len(data) > MAX_FILE_BYTES:
        cap = f"{MAX_FILE_BYTES // 2**20} MB" if MAX_FILE_BYTES >= 2**20 else f"{MAX_FILE_BYTES} bytes"
        msg = f"the file is larger than {cap}: not an inventory file"
        return InventoryIssue((), msg, str(file), rule="INV-READ")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        msg = "the file is UTF-16 (it starts with a UTF-16 byte-order mark): re-save it as UTF-8"
        return InventoryIssue((), msg, str(file), 1, 1, rule="INV-ENCODING")
    wide = _utf16_or_32(data)
    if wide is not None:
        msg = f"the file looks like {wide} without a byte-order mark (every other byte is NUL): re-save it as UTF-8"
        return InventoryIssue((), msg, str(file), 1, 1, rule="INV-ENCODING")
    try:
        text = data.decode("utf-8-sig")  # a UTF-8 byte-order mark is allowed at the start (YAML 1.2)
    except UnicodeDecodeError as exc:
        return _encoding_issue(file, data, exc)
    return _nonprintable_issue(file, text) or text


_NONPRINTABLE_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ufffe\uffff]")
"""Characters YAML 1.2 does not allow in a stream (its c-printable set's complement): a parser
that meets one may stop there and return what it read so far, so the file is refused whole."""


def _nonprintable_issue(file: Path, text: str) -> InventoryIssue | None:
    """`file:line:col: the character U+0000 is not allowed in YAML`, the first such character located."""
    m = _NONPRINTABLE_RE.search(text)
    if m is None:
        return None
    line = text.count("\n", 0, m.start()) + 1
    col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
    name = "NUL" if m.group() == "\x00" else "a control character"
    msg = (
        f"{name} (U+{ord(m.group()):04X}) is not allowed in a YAML file: the file is refused whole "
        "(a binary or corrupted file? write it as UTF-8 text; inside a double-quoted string use an escape such as \\t)"
    )
    return InventoryIssue((), msg, str(file), line, col, rule="INV-ENCODING")


def _utf16_or_32(data: bytes) -> str | None:
    """'UTF-16LE', 'UTF-16BE', 'UTF-32LE' or 'UTF-32BE' for text of ASCII characters written in that encoding
    without a byte-order mark (a NUL in at least half the even or odd bytes of the first 4 KB), else None."""
    head = data[:4096]
    if b"\x00" not in head or len(head) < 4:
        return None
    if head[2::4].count(0) * 2 >= len(head[2::4]) and head[1::4].count(0) * 2 >= len(head[1::4]):
        return "UTF-32LE" if head[0] != 0 else "UTF-32BE" if head[3] != 0 else None
    odd, even = head[1::2].count(0), head[0::2].count(0)
    if odd * 2 >= len(head[1::2]) and even * 2 < len(head[0::2]):
        return "UTF-16LE"
    if even * 2 >= len(head[0::2]) and odd * 2 < len(head[1::2]):
        return "UTF-16BE"
    return None


def _encoding_issue(file: Path, data: bytes, exc: UnicodeDecodeError) -> InventoryIssue:
    """`file:line:col: not valid UTF-8: byte 0xff at byte offset N`, line and column counted in the file."""
    line = data.count(b"\n", 0, exc.start) + 1
    line_start = data.rfind(b"\n", 0, exc.start) + 1
    col = len(data[line_start : exc.start].decode("utf-8", errors="replace")) + 1
    bad = data[exc.start : exc.end].hex(" ")
    msg = (
        f"not valid UTF-8: byte(s) {bad} at byte offset {exc.start} "
        "(inventory files are UTF-8 text; re-save the file as UTF-8)"
    )
    return InventoryIssue((), msg, str(file), line, col, rule="INV-ENCODING")


ALIAS_BUDGET = 1_000_000
"""How many nodes YAML aliases may add to a file when expanded (a billion-laughs guard)."""

ALIAS_BYTES_BUDGET = 64 * 1024 * 1024
"""How many bytes of scalar text YAML aliases may add to a file when expanded: a few aliases of a
large string cost gigabytes without many nodes (nine copies of nine copies ... of 100 kB)."""

_ANCHOR_RE = re.compile(r"&[^\s\[\]{},]")


def alias_bomb(file: Path, text: str) -> InventoryIssue | None:
    """Refuse a file whose aliases would add more than ALIAS_BUDGET nodes or ALIAS_BYTES_BUDGET bytes.

    yaml-rs expands every alias into a full copy: a 100 KB file of aliases to aliases can
    mean gigabytes, and under a memory limit yaml-rs aborts the process instead of raising.
    The expanded size is counted over PyYAML's event stream first (each anchored node's
    size in nodes and in scalar bytes is known when it ends; an alias adds that size), which
    builds nothing. Only files that define an anchor pay for this pass.
    """
    if _ANCHOR_RE.search(text) is None or "*" not in text:
        return None
    sizes: dict[str, tuple[int, int]] = {}
    open_nodes: list[tuple[str | None, int, int]] = []
    count = extra = 0
    nbytes = extra_bytes = 0
    try:
        for event in yaml.parse(text, Loader=YAML_LOADER):
            if isinstance(event, yaml.AliasEvent):
                size = sizes.get(event.anchor or "")
                if size is None:
                    if any(anchor == event.anchor for anchor, _, _ in open_nodes):
                        msg = f"YAML: the alias *{event.anchor} refers to a node that contains it (recursive)"
                        return _at(file, event.start_mark, msg)
                    continue  # undefined: the parser below reports it
                n, b = size
                count += n
                extra += n
                nbytes += b
                extra_bytes += b
                if extra > ALIAS_BUDGET:
                    msg = (
                        f"YAML: aliases expand this file by more than {ALIAS_BUDGET:,} nodes "
                        f"(*{event.anchor} copies {n:,} here); write the data out or use fewer nested aliases"
                    )
                    return _at(file, event.start_mark, msg)
                if extra_bytes > ALIAS_BYTES_BUDGET:
                    msg = (
                        f"YAML: aliases expand this file by more than {ALIAS_BYTES_BUDGET:,} bytes "
                        f"(*{event.anchor} copies {b:,} bytes here); write the data out or use fewer nested aliases"
                    )
                    return _at(file, event.start_mark, msg)
            elif isinstance(event, yaml.ScalarEvent):
                count += 1
                nbytes += len(event.value)
                if event.anchor:
                    sizes[event.anchor] = (1, len(event.value))
            elif isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
                count += 1
                open_nodes.append((event.anchor, count, nbytes))
            elif isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
                anchor, start, start_bytes = open_nodes.pop()
                if anchor:
                    sizes[anchor] = (count - start + 1, nbytes - start_bytes)
    except yaml.YAMLError:
        return None  # a syntax error: the parser below reports it
    return None


def _at(file: Path, mark: Any, message: str) -> InventoryIssue:
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
    return InventoryIssue((), message, str(file), line, col, rule="INV-YAML")
