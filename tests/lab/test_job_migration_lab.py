"""Level 3 moves the jobs, on real Slurm in the lab (issue #35): the scenario of tests/cf_job_migration.py on a copy
of the lab inventory on its own lab root. Long (`make test-long`): the Slurm image and the deploy take minutes;
about 6 minutes here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cf_job_migration import LIMIT_S, UP_ARGS, run_scenario, shape
from cf_lab_net import lab_copy

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.lab, pytest.mark.long]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with lab_copy(tmp_path_factory, ROOT / "inventories" / "lab", "cfmig", *UP_ARGS, edit=shape) as env:
        yield env


def test_a_hot_gpu_moves_its_job_and_keeps_the_unrequeueable_one(env: Path, tmp_path: Path) -> None:
    seconds = run_scenario(env, tmp_path)
    print({k: round(v) for k, v in seconds.items()})
    assert seconds["fault (3 h of heat stored) -> the requeued job running on another node"] < LIMIT_S
