"""Write a rendered tree to disk: atomic per file, unchanged files left alone, stale ones removed.

A manifest (`.clusterforge-manifest`, one relative path a line) records what the last
render wrote, so a file that is no longer rendered (a node removed from the inventory)
is deleted — and only such files: nothing the manifest does not list is ever touched.
Before writing, the manifest is widened to old + new paths, so an interrupted write
still leaves every file it may have created listed for the next run to prune.

Nothing is written or deleted outside the resolved output directory: every path is relative
and normalized, and a symlink anywhere on the way to a file we write or delete (a symlinked
subdirectory, the manifest itself) is refused before anything is touched (UnsafeOutput). A
manifest line that is not such a path is never followed; it is reported and dropped. The whole
write holds the directory's lock (a second render waits or is refused, never interleaves), and
temporaries a killed run left behind are removed first.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..util.fsutil import LOCK_FILE, directory_lock, remove_temporaries, terminate_cleanly, write_atomic

MANIFEST = ".clusterforge-manifest"
RESERVED = (MANIFEST, LOCK_FILE)
PRIVATE_DIRS = ("etc/netplan/", "etc/lhsmd/")
"""Trees whose files only root reads: netplan warns about (and may refuse) world-readable files; the HSM
copytool's configuration names where its S3 keys are (a site may put them in it, as Lemur allows)."""


def file_mode(rel: str) -> int:
    return 0o600 if any(d in rel for d in PRIVATE_DIRS) else 0o644


class UnsafeOutput(ValueError):
    """The output tree holds a symlink (or another non-directory) on the way to a path we would touch."""


@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    """Manifest lines that are not plain relative paths inside the directory: never followed, dropped."""
    temporaries: list[str] = field(default_factory=list)
    """Leftover temporaries of an interrupted run, removed."""


def _check(rel: str) -> PurePosixPath:
    path = PurePosixPath(rel)
    if (path.is_absolute() or not path.parts or any(p in ("", ".", "..") for p in path.parts)
            or str(path) != rel or any(ord(c) < 0x20 or c == "\x7f" for c in rel)):
        raise ValueError(f"refusing to write {rel!r}: not a plain relative path")
    if rel in RESERVED:
        raise ValueError(f"{rel} is reserved for clusterforge's own bookkeeping")
    return path


def read_manifest(out_dir: Path) -> list[str]:
    path = out_dir / MANIFEST
    if path.is_symlink():
        raise UnsafeOutput(f"{path} is a symlink; refusing to follow it")
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def _write_manifest(out_dir: Path, paths: list[str]) -> None:
    body = "# files written by clusterforge render; stale ones are removed on the next render\n"
    write_atomic(out_dir / MANIFEST, body + "".join(f"{p}\n" for p in sorted(set(paths))))


class _Guard:
    """Checks that the way from the output directory to a path holds only real directories."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._ok: set[Path] = {root}

    def parents(self, rel: PurePosixPath) -> None:
        current = self.root
        for part in rel.parts[:-1]:
            current = current / part
            if current in self._ok:
                continue
            try:
                st = os.lstat(current)
            except FileNotFoundError:
                self._ok.add(current)  # created by us, as a directory
                continue
            if stat.S_ISLNK(st.st_mode):
                raise UnsafeOutput(f"{current} is a symlink inside the output directory; refusing to write "
                                   f"through it (remove it, or render into another directory)")
            if not stat.S_ISDIR(st.st_mode):
                raise UnsafeOutput(f"{current} is not a directory; cannot write {rel} under it")
            self._ok.add(current)

    def target(self, rel: PurePosixPath) -> None:
        self.parents(rel)
        path = self.root / rel
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(st.st_mode):
            raise UnsafeOutput(f"{path} is a symlink inside the output directory; refusing to replace "
                               "or follow it")
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeOutput(f"{path} is not a regular file; refusing to replace it")


def write_tree(out_dir: Path, files: Mapping[str, str], *, prune: bool = True,
               on_wait: Callable[[str], None] | None = None) -> WriteReport:
    """Write `files` (relative path -> text) under `out_dir`; see the module doc.

    Raises UnsafeOutput (a symlink in the tree), ValueError (a bad path in `files`),
    fsutil.LockTimeout (another run kept the directory) or OSError."""
    for rel in files:
        _check(rel)
    root = out_dir.resolve()
    if root.exists() and not root.is_dir():
        raise UnsafeOutput(f"{out_dir} is not a directory")
    with terminate_cleanly(), directory_lock(root, on_wait=on_wait):
        return _write_locked(root, files, prune)


def _write_locked(root: Path, files: Mapping[str, str], prune: bool) -> WriteReport:
    report = WriteReport()
    guard = _Guard(root)
    previous: list[str] = []
    for rel in read_manifest(root):
        try:
            guard.parents(_check(rel))
            previous.append(rel)
        except UnsafeOutput:
            raise
        except ValueError:
            report.ignored.append(rel)  # a hand-edited or planted line: never followed
    for rel in files:
        guard.target(PurePosixPath(rel))
    stale = sorted(set(previous) - set(files)) if prune else []
    for rel in stale:
        if (root / rel).is_symlink():
            raise UnsafeOutput(f"{root / rel} is a symlink inside the output directory; refusing to remove it "
                               "or follow it")
    known: dict[Path, set[str]] = {}
    for rel in [*previous, *files]:
        known.setdefault((root / rel).parent, set()).add(PurePosixPath(rel).name)
    report.temporaries = sorted(str(p.relative_to(root)) for p in remove_temporaries(root, known))
    _write_manifest(root, [*previous, *files])
    for rel, text in files.items():
        target = root / rel
        data = text.encode("utf-8")
        mode = file_mode(rel)
        if target.is_file() and target.read_bytes() == data and target.stat().st_mode & 0o777 == mode:
            report.unchanged.append(rel)
            continue
        write_atomic(target, data, mode)
        report.written.append(rel)
    for rel in stale:
        target = root / rel
        if target.is_file() and not target.is_symlink():
            target.unlink()
            report.removed.append(rel)
            _remove_empty_dirs(target.parent, root)
    _write_manifest(root, list(files) if prune else [*previous, *files])
    return report


def _remove_empty_dirs(start: Path, stop: Path) -> None:
    current = start
    while current != stop and stop in current.parents:
        try:
            current.rmdir()
        except OSError:
            return
        current = current.parent
