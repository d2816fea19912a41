"""Shared fixtures: the lab inventory's host plans, with the lab repository the captures were taken with."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.api import Checked, load_checked
from clusterforge.deploy.component import HostPlan
from clusterforge.deploy.desired import host_plans
from clusterforge.deploy.options import DeployOptions, Mirror

ROOT = Path(__file__).resolve().parents[3]
LAB_MIRROR = Mirror("http://198.19.77.1:8765/", "lab", ("main",), "trusted=yes")


@pytest.fixture(scope="session")
def checked() -> Checked:
    return load_checked(ROOT / "inventories" / "lab")


@pytest.fixture(scope="session")
def plans(checked: Checked) -> dict[str, HostPlan]:
    return host_plans(checked.index, DeployOptions("lab", repo=LAB_MIRROR))
