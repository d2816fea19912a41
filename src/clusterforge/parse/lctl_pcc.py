"""``lctl get_param llite.*.pcc`` (a Lustre client): per mounted file system, the Persistent Client Cache
back-ends attached to it (`lctl pcc add`), as the client itself reports them.

Each client mount is ``llite.<fsname>-<instance>.pcc=`` followed, when back-ends are attached, by YAML that
``pcc_super_dump`` / ``pcc_dataset_dump`` print (lustre/llite/pcc.c; keys ``PCC_YAML_*`` in
include/uapi/linux/lustre/lustre_user.h)::

    llite.lfs01-ffff8f8c3a3b5000.pcc=
    pcc:
      -
        pccpath: /mnt/pcc
        hsmtool: lhsmtool_posix
        rwid: 2
        roid: 0
        flags: 1e
        autocache: projid={1000}

``flags`` is hexadecimal (``%x``): 0x10 a read-write back-end (PCC-RW), 0x20 read-only (PCC-RO), 0x02/0x04/0x08
auto-attach at open/IO/stat (enum pcc_dataset_flags, lustre/llite/pcc.h). A mount with nothing attached prints
the parameter line alone. No real capture of this output is in the samples: the tests use text built from
those sources, marked as constructed. A line that fits none of this is a ParseError naming it; empty text (no
Lustre mount) parses to no mounts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from clusterforge.parse._common import fail, numbered, split_lines

TOOL = "lctl-pcc"
RW, RO = 0x10, 0x20

__all__ = ["PccDataset", "PccMount", "parse", "to_json"]


@dataclass(frozen=True, slots=True)
class PccDataset:
    path: str
    hsmtool: str
    rwid: int
    roid: int
    flags: int
    autocache: str

    @property
    def modes(self) -> tuple[str, ...]:
        return tuple(m for bit, m in ((RW, "readwrite"), (RO, "readonly")) if self.flags & bit)


@dataclass(frozen=True, slots=True)
class PccMount:
    instance: str
    """``lfs01-ffff8f8c3a3b5000``: the file system and the client's mount instance."""
    fsname: str
    datasets: tuple[PccDataset, ...]


_PARAM = re.compile(r"^llite\.(([a-z][a-z0-9_]{0,7})-([0-9a-f]+))\.pcc=(.*)$")
_KEY = re.compile(r"^    (pccpath|hsmtool|rwid|roid|flags|autocache): ?(.*)$")
_NUMBERS = {"rwid": 10, "roid": 10, "flags": 16}


def parse(text: str) -> tuple[PccMount, ...]:
    mounts: list[PccMount] = []
    current: dict[str, Any] | None = None
    sets: list[dict[str, str]] = []
    item: dict[str, str] | None = None

    def close() -> None:
        nonlocal current, sets, item
        for d in sets:
            if not d.get("pccpath"):
                n = int(d["_line"])
                raise fail(TOOL, n, lines[n - 1], "a PCC back-end without its pccpath")
        if current is not None:
            mounts.append(PccMount(current["instance"], current["fsname"], tuple(_dataset(d) for d in sets)))
        current, sets, item = None, [], None

    lines = split_lines(text)
    for line_no, raw, _ in numbered(lines):  # the non-blank lines; indentation kept (rstrip only)
        line = raw.rstrip()
        m = _PARAM.match(line)
        if m:
            close()
            if m.group(4):
                raise fail(TOOL, line_no, raw, "a pcc parameter's value starts on the next line")
            current = {"instance": m.group(1), "fsname": m.group(2)}
            continue
        if current is None:
            raise fail(TOOL, line_no, raw, "expected 'llite.<fsname>-<instance>.pcc='")
        if line == "pcc:":
            continue
        if line == "  -":
            item = {"_line": str(line_no)}
            sets.append(item)
            continue
        k = _KEY.match(line)
        if k is None or item is None:
            raise fail(TOOL, line_no, raw, "expected a PCC back-end's 'key: value' (pccpath, hsmtool, rwid, roid, "
                                            "flags, autocache) under '  -'")
        key, value = k.group(1), k.group(2).strip()
        if key in _NUMBERS and not re.fullmatch(r"[0-9a-fA-F]+" if key == "flags" else r"[0-9]+", value):
            raise fail(TOOL, line_no, raw, f"{key} is not a number: {value!r}")
        item[key] = value
    close()
    return tuple(mounts)


def _dataset(d: dict[str, str]) -> PccDataset:
    return PccDataset(d.get("pccpath", ""), d.get("hsmtool", ""), int(d.get("rwid", "0")), int(d.get("roid", "0")),
                      int(d.get("flags", "0"), 16), d.get("autocache", ""))


def to_json(mounts: tuple[PccMount, ...]) -> list[dict[str, Any]]:
    return [{"instance": m.instance, "fsname": m.fsname,
             "datasets": [{"pccpath": d.path, "hsmtool": d.hsmtool, "rwid": d.rwid, "roid": d.roid,
                           "flags": d.flags, "modes": list(d.modes), "autocache": d.autocache} for d in m.datasets]}
            for m in mounts]
