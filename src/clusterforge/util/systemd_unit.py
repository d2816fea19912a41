"""systemd's unit names for paths, as `systemd-escape --path --suffix=mount` writes them.

A mount unit must be named for its `Where=`: systemd refuses to load `/etc/systemd/system/X.mount` unless X is
the escaped mount point. The escaping, from systemd's `unit_name_path_escape` (src/basic/unit-name.c):

- the path is simplified (`//` -> `/`, `/./` -> `/`, a trailing `/` dropped); a `..` component is refused
  ("not a normalized file system path"); the root is `-`;
- the leading and trailing `/` go, each inner `/` becomes `-`;
- every byte that is not an ASCII letter or digit or one of `:_.` becomes `\\xNN` (lower-case hex, one escape
  per UTF-8 byte), and so do `-` and `\\` themselves;
- a `.` is escaped only as the name's first character (no unit name starts with a dot): `/.pcc` -> `\\x2epcc`,
  `/mnt/.pcc` -> `mnt-.pcc`.

A unit name is at most 255 characters (UNIT_NAME_MAX, 256 with the NUL); a path whose name would be longer
cannot be a mount unit at all. Pure.
"""

from __future__ import annotations

import string

from .echo import echo

UNIT_NAME_MAX = 255
"""The longest unit name systemd loads (its UNIT_NAME_MAX is 256, the terminating NUL included)."""

_VALID = frozenset((string.ascii_letters + string.digits + ":_.").encode())


class UnitNameError(ValueError):
    """A path systemd cannot name a unit for."""


def _simplified(path: str) -> list[str]:
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnitNameError(f"{echo(path)} is not a normalized path ('..'): systemd cannot name a unit for it")
    return parts


def escape_path(path: str) -> str:
    """`systemd-escape --path PATH`: `/lustre/lfs-01` -> `lustre-lfs\\x2d01`, `/` -> `-`. UnitNameError for a path
    with a `..` component."""
    parts = _simplified(path)
    if not parts:
        return "-"
    raw = "/".join(parts).encode("utf-8", "surrogateescape")
    out: list[str] = []
    for i, byte in enumerate(raw):
        if byte == ord("/"):
            out.append("-")
        elif byte in _VALID and not (i == 0 and byte == ord(".")):
            out.append(chr(byte))
        else:
            out.append(f"\\x{byte:02x}")
    return "".join(out)


def mount_unit(path: str) -> str:
    """The mount unit for a mount point (`/lustre/lfs01` -> `lustre-lfs01.mount`), as `systemd-escape --path
    --suffix=mount` names it; UnitNameError when systemd cannot name it (a `..` component, or a name over 255
    characters)."""
    name = escape_path(path) + ".mount"
    if len(name) > UNIT_NAME_MAX:
        raise UnitNameError(f"{echo(path)} needs a mount unit name of {len(name)} characters ({name[:40]}...): "
                            f"systemd names units of at most {UNIT_NAME_MAX}; use a shorter mount point")
    return name


def mount_unit_problem(path: str) -> str | None:
    """Why systemd cannot name `path`'s mount unit, or None when it can (the inventory check's words)."""
    try:
        mount_unit(path)
    except UnitNameError as exc:
        return str(exc)
    return None
