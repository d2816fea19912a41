"""Write a rendered tree to disk: atomic per file, unchanged files left alone, stale ones removed.

A manifest (`.clusterforge-manifest`, one relative path a line) records what the last
render wrote, so a file that is no longer rendered (a node removed from the inventory)
is deleted — and only such files: nothing the manifest does not list is ever touched.
Before writing, the manifest is widened to old + new paths, so an interrupted write
still leaves every file it may have created listed for the next run to prune.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..fsutil import write_atomic

MANIFEST = ".clusterforge-manifest"
PRIVATE_DIRS = ("etc/netplan/",)  # netplan warns about (and may refuse) world-readable files


def file_mode(rel: str) -> int:
    return 0o600 if any(d in rel for d in PRIVATE_DIRS) else 0o644


@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def _check(rel: str) -> PurePosixPath:
    path = PurePosixPath(rel)
    if path.is_absolute() or not path.parts or any(p in ("", ".", "..") for p in path.parts):
        raise ValueError(f"refusing to write {rel!r}: not a plain relative path")
    if rel == MANIFEST:
        raise ValueError(f"{MANIFEST} is reserved for the render manifest")
    return path


def read_manifest(out_dir: Path) -> list[str]:
    path = out_dir / MANIFEST
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def _write_manifest(out_dir: Path, paths: list[str]) -> None:
    body = "# files written by clusterforge render; stale ones are removed on the next render\n"
    write_atomic(out_dir / MANIFEST, body + "".join(f"{p}\n" for p in sorted(set(paths))))


def write_tree(out_dir: Path, files: Mapping[str, str], *, prune: bool = True) -> WriteReport:
    """Write `files` (relative path -> text) under `out_dir`; see the module doc."""
    for rel in files:
        _check(rel)
    report = WriteReport()
    previous = read_manifest(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_manifest(out_dir, [*previous, *files])
    for rel, text in files.items():
        target = out_dir / rel
        data = text.encode("utf-8")
        mode = file_mode(rel)
        if target.is_file() and not target.is_symlink() and target.read_bytes() == data \
                and target.stat().st_mode & 0o777 == mode:
            report.unchanged.append(rel)
            continue
        write_atomic(target, data, mode)
        report.written.append(rel)
    if prune:
        for rel in sorted(set(previous) - set(files)):
            try:
                _check(rel)
            except ValueError:
                continue  # a hand-edited manifest line: never follow it
            target = out_dir / rel
            if target.is_file() or target.is_symlink():
                target.unlink()
                report.removed.append(rel)
                _remove_empty_dirs(target.parent, out_dir)
    _write_manifest(out_dir, list(files) if prune else [*previous, *files])
    return report


def _remove_empty_dirs(start: Path, stop: Path) -> None:
    current = start
    while current != stop and stop in current.parents:
        try:
            current.rmdir()
        except OSError:
            return
        current = current.parent
