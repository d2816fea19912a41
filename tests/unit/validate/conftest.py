from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from clusterforge.api import Checked, load_checked

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def lab() -> Checked:
    return load_checked(ROOT / "inventories" / "lab")


@pytest.fixture
def lab_copy(tmp_path: Path) -> Path:
    env = tmp_path / "lab"
    shutil.copytree(ROOT / "inventories" / "lab", env)
    return env
