"""``lfs df`` / ``lfs df -h`` (Lustre client): each mounted file system's targets, their space, and the
targets the client cannot reach.

One block per mounted file system, each opening with its header::

    UUID                       bytes        Used   Available Use% Mounted on      (-h)
    UUID                   1K-blocks        Used   Available Use% Mounted on      (plain)
    fsx-MDT0000_UUID          102.8G        4.4G       98.5G   4% /mnt/fsx[MDT:0]
    OST0001             : inactive device
    fs-OST0002_UUID             2.9G       33.1M        2.6G   1% /mnt/fs[OST:2]

    filesystem_summary:         3.3T      196.0M        3.3T   0% /mnt/fsx

A target the client cannot use is a line ``<name> : <why>`` (``inactive device``, or an error such as
``Resource temporarily unavailable``): it is kept, with its index and the reason, never skipped. The
summary label is ``filesystem_summary:`` (newer) or ``filesystem summary:`` (older), with or without a
blank line before it. Sizes are bytes: ``-h`` figures (K/M/G/T/P/E, powers of 1024) rounded as printed,
plain ones are 1 KiB blocks. No Lustre mounted: lfs prints nothing on stdout (and exits non-zero), and
empty text parses to no file systems. Anything else is a ParseError naming the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from clusterforge.parse._common import fail, numbered, shorten, split_lines

TOOL = "lfs-df"

__all__ = ["LfsFilesystem", "LfsTarget", "parse", "to_json"]


@dataclass(frozen=True, slots=True)
class LfsTarget:
    kind: str
    """``MDT`` or ``OST``."""
    index: int
    name: str
    """As printed: ``fsx-OST0001_UUID``, or ``OST0001`` on an inactive line."""
    active: bool
    status: str
    """``active``, or what lfs printed instead of the figures (``inactive device``)."""
    total_bytes: int | None
    used_bytes: int | None
    available_bytes: int | None
    use_percent: int | None


@dataclass(frozen=True, slots=True)
class LfsFilesystem:
    mount: str | None
    """The mount point (from the targets' or the summary's column); None when every target is inactive
    and the summary is missing."""
    fsname: str | None
    """From the targets' UUIDs (``fsx`` of ``fsx-OST0000_UUID``)."""
    targets: tuple[LfsTarget, ...]
    total_bytes: int | None
    """The summary's (OST space), None when lfs printed no summary."""
    used_bytes: int | None
    available_bytes: int | None


_HEADER = re.compile(r"UUID\s+(bytes|1K-blocks)\s+Used\s+Available\s+Use%\s+Mounted on")
_SIZE = r"(\d+(?:\.\d+)?[KMGTPE]?)"
_TARGET = re.compile(rf"(?:(\S+?)-)?(MDT|OST)([0-9a-fA-F]{{4}})_UUID\s+{_SIZE}\s+{_SIZE}\s+{_SIZE}\s+(\d+)%\s+"
                     r"(\S+)\[(MDT|OST):(\d+)\]")
_DOWN = re.compile(r"(?:(\S+?)-)?(MDT|OST)([0-9a-fA-F]{4})(?:_UUID)?\s*:\s*(\S.*)")
_SUMMARY = re.compile(rf"filesystem[_ ]summary:\s+{_SIZE}\s+{_SIZE}\s+{_SIZE}\s+(\d+)%\s+(\S+)")
_UNIT = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}


def _bytes(raw: str, human: bool, idx: int, line: str) -> int:
    if not human:
        if not raw.isdigit():
            raise fail(TOOL, idx, line, f"expected a count of 1K blocks, got {raw!r}")
        return int(raw) * 1024
    num, unit = (raw[:-1], raw[-1]) if raw[-1] in _UNIT else (raw, "")
    return round(float(num) * float(1024 ** _UNIT[unit]))


@dataclass
class _Block:
    human: bool
    targets: list[LfsTarget]
    mount: str | None = None
    fsname: str | None = None
    summary: tuple[int, int, int] | None = None


def parse(text: str) -> tuple[LfsFilesystem, ...]:
    blocks: list[_Block] = []
    cur: _Block | None = None
    for idx, raw, line in numbered(split_lines(text)):
        if m := _HEADER.fullmatch(line):
            cur = _Block(human=m.group(1) == "bytes", targets=[])
            blocks.append(cur)
            continue
        if cur is None:
            raise fail(TOOL, idx, raw, f"expected lfs df's header (UUID bytes Used Available ...), got {shorten(raw)}")
        if cur.summary is not None:
            raise fail(TOOL, idx, raw, f"a line after the file system's summary and before the next header: "
                                       f"{shorten(raw)}")
        if m := _TARGET.fullmatch(line):
            fs, kind, hexidx, total, used, avail, pct, mount, kind2, idx2 = m.groups()
            if kind != kind2 or int(hexidx, 16) != int(idx2):
                raise fail(TOOL, idx, raw, f"the UUID names {kind}{hexidx}, the mount column {kind2}:{idx2}")
            _same(cur, fs, mount, idx, raw)
            cur.targets.append(LfsTarget(kind, int(hexidx, 16), m.group(0).split()[0], True, "active",
                                         _bytes(total, cur.human, idx, raw), _bytes(used, cur.human, idx, raw),
                                         _bytes(avail, cur.human, idx, raw), int(pct)))
        elif m := _SUMMARY.fullmatch(line):
            total, used, avail, _pct, mount = m.groups()
            _same(cur, None, mount, idx, raw)
            cur.summary = (_bytes(total, cur.human, idx, raw), _bytes(used, cur.human, idx, raw),
                           _bytes(avail, cur.human, idx, raw))
        elif m := _DOWN.fullmatch(line):
            fs, kind, hexidx, why = m.groups()
            _same(cur, fs, None, idx, raw)
            cur.targets.append(LfsTarget(kind, int(hexidx, 16), line.split(":", 1)[0].strip(), False,
                                         why.strip(), None, None, None, None))
        else:
            raise fail(TOOL, idx, raw, f"expected a target line (NAME_UUID size used available use% "
                                       f"mount[OST:n]), an unavailable one (NAME : why) or the summary, got "
                                       f"{shorten(raw)}")
    out: list[LfsFilesystem] = []
    for b in blocks:
        total, used, avail = b.summary if b.summary is not None else (None, None, None)
        out.append(LfsFilesystem(b.mount, b.fsname, tuple(b.targets), total, used, avail))
    return tuple(out)


def _same(cur: _Block, fs: str | None, mount: str | None, idx: int, raw: str) -> None:
    """A block is one file system: its targets share one fsname and one mount point."""
    if fs is not None:
        if cur.fsname is not None and fs != cur.fsname:
            raise fail(TOOL, idx, raw, f"file system {fs!r} in the block of {cur.fsname!r} (no header between)")
        cur.fsname = fs
    if mount is not None:
        if cur.mount is not None and mount != cur.mount:
            raise fail(TOOL, idx, raw, f"mount {mount} in the block of {cur.mount} (no header between)")
        cur.mount = mount


def to_json(filesystems: tuple[LfsFilesystem, ...]) -> list[dict[str, Any]]:
    return [{"mount": f.mount, "fsname": f.fsname, "total_bytes": f.total_bytes, "used_bytes": f.used_bytes,
             "available_bytes": f.available_bytes,
             "targets": [{"kind": t.kind, "index": t.index, "name": t.name, "active": t.active, "status": t.status,
                          "total_bytes": t.total_bytes, "used_bytes": t.used_bytes,
                          "available_bytes": t.available_bytes, "use_percent": t.use_percent}
                         for t in f.targets]}
            for f in filesystems]
