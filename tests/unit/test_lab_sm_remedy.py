"""lab/sm_remedy.py's choices without a lab (the lab's own run: tests/lab/test_planes_lab.py, a master made to
stand still and `lab cable` restarting it): which SM node is the master, and the order wait -> restart -> wait."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.lab import sm_remedy
from clusterforge.lab.errors import LabError
from clusterforge.lab.state import HostRecord, LabState


def _state(*hosts: tuple[str, str]) -> LabState:
    return LabState(lab="t", mode="podman", state_dir=Path("/nonexistent"), spec_digest="", gateway="",
                    network_cidr="", ibsim_address="", netfile="",
                    hosts={n: HostRecord(n, "", role, []) for n, role in hosts}, complete=True)


def test_the_master_is_the_highest_priority_sm_node_running_in_the_lab() -> None:
    state = _state(("sm01", "subnet-manager"), ("sm02", "subnet-manager"), ("gpu01", "compute"))
    assert sm_remedy.master_sm_node(state, [("sm02", 14), ("sm01", 15)]) == "sm01"
    assert sm_remedy.master_sm_node(state, [("sm09", 15), ("sm02", 14)]) == "sm02"  # sm09 is not in this lab
    assert sm_remedy.master_sm_node(state, []) is None
    assert sm_remedy.has_subnet_manager(state) and not sm_remedy.has_subnet_manager(_state(("gpu01", "compute")))


def test_wait_then_restart_then_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    state = _state(("sm01", "subnet-manager"))
    calls: list[str] = []
    outcomes = iter([LabError("HCAs not Active before the deadline: gpu02-mlx5_1: Initializing"), None])

    def wait(_state: LabState, hosts: set[str], timeout: float) -> None:
        calls.append(f"wait {sorted(hosts)} {timeout:g}")
        exc = next(outcomes)
        if exc is not None:
            raise exc

    def restart(_state: LabState, host: str) -> list[str]:
        calls.append(f"restart {host}")
        return ["opensm-plane@0", "opensm-plane@1"]

    monkeypatch.setattr(sm_remedy, "wait_hcas_active", wait)
    monkeypatch.setattr(sm_remedy, "restart_opensm", restart)
    said: list[str] = []
    sm_remedy.wait_active_or_restart_master(state, {"gpu02-mlx5_1"}, "sm01", said.append)
    assert calls == ["wait ['gpu02-mlx5_1'] 60", "restart sm01", "wait ['gpu02-mlx5_1'] 90"]
    (text,) = said
    assert text.startswith("not Active after 60 s (HCAs not Active") and \
        "restarted sm01's opensm-plane@0, opensm-plane@1 (the plane's master: " in text

    # no master to restart (or nothing restarted): the error says why a lab SM can stop sweeping
    outcomes = iter([LabError("HCAs not Active before the deadline: x")])
    with pytest.raises(LabError, match="umad2sim has no MAD timeouts"):
        sm_remedy.wait_active_or_restart_master(state, {"x"}, None, said.append)
    # still not Active after the restart: said so
    outcomes = iter([LabError("first"), LabError("HCAs not Active before the deadline: x")])
    with pytest.raises(LabError, match="even after sm01's OpenSM restarted"):
        sm_remedy.wait_active_or_restart_master(state, {"x"}, "sm01", said.append)
