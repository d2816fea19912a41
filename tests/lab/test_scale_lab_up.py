"""The scale lab at N=8 (lab/scale.py): up, every target answers SSH as itself, down with nothing left; a
killed run's leftovers are stopped by the next start; a size that does not fit is refused with nothing started.

Needs root, sshd and iproute2 (`scripts/lab-deps.sh --netns`).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from cf_lab_net import free_block
from clusterforge.lab.hosts.scale import (
    ScaleLab,
    cleanup,
    missing,
    our_bridges,
    our_namespaces,
    our_veths,
)
from clusterforge.lab.hosts.scale_plan import ScaleRefused, missing_neighbours
from clusterforge.lab.proc import is_alive

pytestmark = [pytest.mark.lab, pytest.mark.skipif(bool(missing()), reason=f"scale lab: missing {missing()}")]


def _nothing_left() -> None:
    assert our_namespaces() == [] and our_veths() == [] and our_bridges() == []


def test_eight_targets_up_answer_and_down(tmp_path: Path) -> None:
    subnet = free_block(20)
    with ScaleLab(8, work=tmp_path / "scale", subnet=subnet) as lab:
        assert lab.target_mb is not None and lab.target_mb >= 1.0
        assert len(lab.targets) == 8 and len(our_namespaces()) == 8
        # every target's permanent neighbour entry survived the bring-up (a bridge whose MAC followed its
        # ports flushed them as lower-MAC veths joined: 179-258 of 1,024 lost, those targets unreachable)
        neigh = subprocess.run(["ip", "-j", "neigh", "show", "nud", "permanent"], capture_output=True, text=True,
                               check=True).stdout
        assert missing_neighbours([t.address for t in lab.targets], neigh) == []
        procs = list(lab._procs)
        for t in (lab.targets[0], lab.targets[-1]):
            out = subprocess.run([*lab.ssh_argv(t.address), "hostname -I"], capture_output=True, text=True,
                                 timeout=30, check=True).stdout
            assert out.split() == [t.address]  # its own namespace, its own address
    assert not any(is_alive(p) for p in procs)
    _nothing_left()


def test_the_memory_probe_starts_and_waits_on_its_own_targets_only(tmp_path: Path) -> None:
    """A lab of 12 probed with 4 targets: the probe waited on all 12 (8 never started, 2 s a connect, then
    'not listening after 60 s'); a 1,024-target bench sat 33 minutes in it."""
    lab = ScaleLab(12, work=tmp_path / "scale", subnet=free_block(20))
    lab._prepare()
    t0 = time.monotonic()
    try:
        mb = lab.measure_target_mb(4)
    finally:
        lab.stop()
        cleanup(lab.work)
    assert time.monotonic() - t0 < 30 and mb >= 1.0
    _nothing_left()


def test_a_killed_runs_leftovers_are_cleaned_by_the_next_start(tmp_path: Path) -> None:
    subnet = free_block(20)
    work = tmp_path / "scale"
    first = ScaleLab(4, work=work, subnet=subnet, target_mb=1.0)
    first.start()  # never stopped: as if the run had been killed
    left = list(first._procs)
    assert all(is_alive(p) for p in left)
    first._procs.clear()
    with ScaleLab(4, work=work, subnet=subnet, target_mb=1.0) as second:
        assert not any(is_alive(p) for p in left)
        assert len(our_namespaces()) == 4 and second.targets
    _nothing_left()


def test_a_size_that_does_not_fit_is_refused_with_nothing_started(tmp_path: Path) -> None:
    with pytest.raises(ScaleRefused, match="Nothing was started"):
        ScaleLab(1000, work=tmp_path / "scale", subnet=free_block(20), target_mb=1.0,
                 controller_mb=1e9).__enter__()
    _nothing_left()
