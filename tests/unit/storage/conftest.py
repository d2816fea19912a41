"""Fixtures of the storage tests: prod checked, and everything `render` writes for it (once per session)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.api import Checked, load_checked
from clusterforge.render.core import render_environment

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def prod() -> Checked:
    return load_checked(ROOT / "inventories" / "prod")


@pytest.fixture(scope="session")
def files(prod: Checked) -> dict[str, str]:
    return render_environment(prod.index, "prod")
