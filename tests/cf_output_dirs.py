"""Output directories of a run under test (#33: nothing outside the output dir, no temporary left): what a tree
holds, entry by entry, and the hostile things a user may give where a new output directory belongs."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from clusterforge.util.fsutil import TEMP_SUFFIX


def tree(root: Path, skip: Path | None = None) -> dict[str, str]:
    """Every entry under `root` (never following a link, `skip` and what is under it left out): what it is and,
    for a file, its bytes' digest."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if skip is None or here / d != skip]
        for name in dirnames + filenames:
            p = here / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link -> " + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            elif p.is_file():
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[rel] = "special"
    return out


def temporaries(root: Path) -> list[Path]:
    """fsutil's temporaries (`.NAME.RANDOM.cf-tmp`, the write probe) anywhere under `root`."""
    return [p for p in root.rglob("*") if p.name.endswith(TEMP_SUFFIX) or p.name.startswith(".write-test.")]


def _file(p: Path) -> None:
    p.write_text("not a directory\n")


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _loop(p: Path) -> None:
    p.symlink_to(p)


def _to_root(p: Path) -> None:
    p.symlink_to(Path("/"), target_is_directory=True)


def _to_other_dir(p: Path) -> None:
    (p.parent / "other").mkdir()
    p.symlink_to(p.parent / "other", target_is_directory=True)


def _dangling(p: Path) -> None:
    p.symlink_to(p.parent / "nowhere")


def _stray_file(p: Path) -> None:
    p.mkdir()
    (p / "notes.txt").write_text("mine\n")


HOSTILE: dict[str, tuple[Callable[[Path], None], str]] = {
    "regular-file": (_file, "exists and is not a directory"),
    "fifo": (_fifo, "exists and is not a directory"),
    "symlink-loop": (_loop, "is a symbolic link"),
    "symlink-to-root": (_to_root, "is a symbolic link"),
    "symlink-to-another-dir": (_to_other_dir, "is a symbolic link"),
    "dangling-symlink": (_dangling, "is a symbolic link"),
    "a-stray-file": (_stray_file, "is not empty"),
}
"""kind -> (make it at a path, what the refusal says): each is refused before anything is written."""
