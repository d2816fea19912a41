"""Every test: state the commands keep (the declared-fabric cache of `validate --from`, deploy records) goes to
a temporary directory, never the checkout's `state/` (a test that sets CLUSTERFORGE_STATE_DIR itself wins)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

STATE_DIR_ENV = "CLUSTERFORGE_STATE_DIR"


@pytest.fixture(autouse=True)
def _state_dir_in_tmp(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path | None:
    if os.environ.get(STATE_DIR_ENV):
        return None
    where = tmp_path_factory.mktemp("cf-state")
    monkeypatch.setenv(STATE_DIR_ENV, str(where))
    return where
