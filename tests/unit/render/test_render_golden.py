"""Golden files: every file rendered for the lab equals its reviewed copy in tests/golden/lab.

The goldens are the truth and were checked by hand against each tool's syntax. After an
intended change, regenerate them and review the diff before committing:

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/render/test_render_golden.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _render_common import GOLDEN, lab_index

from clusterforge.render import render_environment

UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
RENDERED = render_environment(lab_index(), "lab")
GOLDEN_FILES = sorted(p.relative_to(GOLDEN).as_posix() for p in GOLDEN.rglob("*") if p.is_file())


def _write(rel: str, text: str) -> None:
    path = GOLDEN / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="")


@pytest.mark.parametrize("rel", sorted(RENDERED))
def test_golden(rel: str) -> None:
    got = RENDERED[rel]
    path = GOLDEN / rel
    if UPDATE:
        _write(rel, got)
    assert path.is_file(), f"no golden for {rel}: run with UPDATE_GOLDEN=1 and review it"
    assert got == path.read_text(encoding="utf-8"), f"{rel} differs from {path}"


def test_no_stale_goldens() -> None:
    stale = sorted(set(GOLDEN_FILES) - set(RENDERED))
    if UPDATE:
        for rel in stale:
            (GOLDEN / rel).unlink()
        stale = []
    assert not stale, f"goldens no longer rendered: {stale}"


def test_render_is_reproducible() -> None:
    assert render_environment(lab_index(), "lab") == RENDERED


def test_every_lab_file_kind_is_golden() -> None:
    kinds = {Path(rel).name for rel in RENDERED}
    for name in ("opensm.conf", "root-guids.conf", "cn-guids.conf", "io-guids.conf", "partitions.conf",
                 "node-name-map", "topology.conf", "ibsim.net", "nccl.conf", "lnet.conf", "lustre.conf",
                 "lustre-lfs01.mount", "60-clusterforge-ipoib.yaml", "hosts", "work-order.csv",
                 "labels.csv", "fabric.dot", "topology.yaml", "gres.conf"):
        assert name in kinds, name
