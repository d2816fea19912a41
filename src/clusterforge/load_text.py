"""Inventory file text before it is parsed: strict UTF-8, a size cap and an alias-expansion bound.

Each guard answers with the InventoryIssue that names the file (and line:col where there is
one) instead of a traceback or an unbounded parse; `load.read_environment` calls them in turn.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from .errors import InventoryIssue

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
    try:
        return data.decode("utf-8-sig")  # a UTF-8 byte-order mark is allowed at the start (YAML 1.2)
    except UnicodeDecodeError as exc:
        return _encoding_issue(file, data, exc)


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

_ANCHOR_RE = re.compile(r"&[^\s\[\]{},]")


def alias_bomb(file: Path, text: str) -> InventoryIssue | None:
    """Refuse a file whose aliases would expand to more than ALIAS_BUDGET extra nodes.

    yaml-rs expands every alias into a full copy: a 100 KB file of aliases to aliases can
    mean gigabytes. The expanded size is counted over PyYAML's event stream first (each
    anchored node's size is known when it ends; an alias adds that size), which builds
    nothing. Only files that define an anchor pay for this pass.
    """
    if _ANCHOR_RE.search(text) is None or "*" not in text:
        return None
    sizes: dict[str, int] = {}
    open_nodes: list[tuple[str | None, int]] = []
    count = extra = 0
    try:
        for event in yaml.parse(text, Loader=YAML_LOADER):
            if isinstance(event, yaml.AliasEvent):
                n = sizes.get(event.anchor or "")
                if n is None:
                    if any(anchor == event.anchor for anchor, _ in open_nodes):
                        msg = f"YAML: the alias *{event.anchor} refers to a node that contains it (recursive)"
                        return _at(file, event.start_mark, msg)
                    continue  # undefined: the parser below reports it
                count += n
                extra += n
                if extra > ALIAS_BUDGET:
                    msg = (
                        f"YAML: aliases expand this file by more than {ALIAS_BUDGET:,} nodes "
                        f"(*{event.anchor} copies {n:,} here); write the data out or use fewer nested aliases"
                    )
                    return _at(file, event.start_mark, msg)
            elif isinstance(event, yaml.ScalarEvent):
                count += 1
                if event.anchor:
                    sizes[event.anchor] = 1
            elif isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
                count += 1
                open_nodes.append((event.anchor, count))
            elif isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
                anchor, start = open_nodes.pop()
                if anchor:
                    sizes[anchor] = count - start + 1
    except yaml.YAMLError:
        return None  # a syntax error: the parser below reports it
    return None


def _at(file: Path, mark: Any, message: str) -> InventoryIssue:
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
    return InventoryIssue((), message, str(file), line, col, rule="INV-YAML")
