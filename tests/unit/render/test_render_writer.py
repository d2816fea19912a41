"""write_tree: atomic writes, unchanged files untouched, stale files (and only those) removed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clusterforge.render.writer import MANIFEST, read_manifest, write_tree
from clusterforge.util.fsutil import LOCK_FILE


def test_write_then_rewrite_then_prune(tmp_path: Path) -> None:
    out = tmp_path / "out"
    files = {"a/b.conf": "one\n", "hosts/n1/etc/netplan/x.yaml": "net\n", "c.txt": "c\n"}
    report = write_tree(out, files)
    assert sorted(report.written) == sorted(files)
    assert (out / "a/b.conf").read_text() == "one\n"
    assert (out / "hosts/n1/etc/netplan/x.yaml").stat().st_mode & 0o777 == 0o600
    assert (out / "c.txt").stat().st_mode & 0o777 == 0o644
    assert read_manifest(out) == sorted(files)

    mtime = (out / "c.txt").stat().st_mtime_ns
    (out / "mine.txt").write_text("not rendered\n")  # a file clusterforge never wrote
    report = write_tree(out, {"a/b.conf": "two\n", "c.txt": "c\n"})
    assert report.written == ["a/b.conf"] and report.unchanged == ["c.txt"]
    assert report.removed == ["hosts/n1/etc/netplan/x.yaml"]
    assert not (out / "hosts").exists()  # emptied directories go too
    assert (out / "c.txt").stat().st_mtime_ns == mtime
    assert (out / "mine.txt").read_text() == "not rendered\n"
    assert read_manifest(out) == ["a/b.conf", "c.txt"]
    assert not [p for p in out.rglob(".*") if p.name not in (MANIFEST, LOCK_FILE)]  # no temp files left


@pytest.mark.parametrize("bad", ["/etc/passwd", "../x", "a/../../x", "", MANIFEST])
def test_refuses_paths_outside_the_tree(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError):
        write_tree(tmp_path, {bad: "x"})


def test_hand_edited_manifest_is_never_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST).write_text("../victim.txt\n/etc/hostname\n")
    write_tree(out, {"x": "y\n"})
    assert victim.read_text() == "keep\n"


def test_failed_write_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    write_tree(out, {"a.conf": "old\n"})

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_tree(out, {"a.conf": "new\n"})
    assert (out / "a.conf").read_text() == "old\n"
    assert [p.name for p in out.iterdir() if p.name.startswith(".a.conf")] == []
