"""The lab's one repository server, shared by runs at the same time (a day-2 plan's parallel deploy steps): the
first starts it, the last one out stops it; a run that ends while another still installs leaves it up (before,
the first to finish stopped it: `Connection refused` in the middle of the other's install)."""

from __future__ import annotations

import contextlib
import json
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from clusterforge.deploy.options import Sources
from clusterforge.lab.state import LabState
from clusterforge.rehearsal import stage
from clusterforge.rehearsal.lablink import REPO_PORT

URL = f"http://127.0.0.1:{REPO_PORT}/dists/"


def _answers() -> bool:
    try:
        urllib.request.urlopen(URL, timeout=2).close()
        return True
    except (urllib.error.URLError, OSError):
        return False


def test_runs_at_the_same_time_share_one_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert not _answers(), f"something already serves {URL}"
    repo = tmp_path / "repo"
    (repo / "dists").mkdir(parents=True)
    monkeypatch.setattr(stage, "lab_repo", lambda state, index: repo)  # the build is not what is tested here
    monkeypatch.setattr(stage, "lab_sources", lambda state, index: Sources())
    state = LabState(lab="t", mode="podman", state_dir=tmp_path / "state", spec_digest="", network_cidr="",
                     gateway="127.0.0.1", ibsim_address="", netfile=tmp_path / "net")
    users = tmp_path / "state" / stage.SERVE_DIR / stage.USERS_FILE
    first, second = contextlib.ExitStack(), contextlib.ExitStack()
    first.enter_context(stage.lab_session(state, None))  # type: ignore[arg-type]
    started = json.loads(users.read_text())
    assert started["count"] == 1 and _answers()
    second.enter_context(stage.lab_session(state, None))  # type: ignore[arg-type]
    assert json.loads(users.read_text()) == {"pid": started["pid"], "count": 2}  # the same server, two users
    first.close()  # the run that started it ends first: the other is still installing
    assert _answers() and json.loads(users.read_text())["count"] == 1
    second.close()  # the last one out stops it
    deadline = time.monotonic() + 10
    while _answers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _answers() and not users.exists()
