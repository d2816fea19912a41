"""`clusterforge lab fault errors|hot|ecc`: the arguments checked against the inventory before anything
changes (exit 2 naming what is wrong), and what a fault writes into the lab's stand-in files: the driver
process (run for real on this machine) raises the counters with wall time, holds the HBM temperature,
grows the ECC counter; `heal` stops it and writes every original value back."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.api import load_checked
from clusterforge.cli.main import app
from clusterforge.lab import monitoring_faults as mf
from clusterforge.lab.errors import FaultError
from clusterforge.lab.monitoring_standins import MonitoredHost, dcgm_file, sysfs_root, write_initial
from clusterforge.lab.proc import ProcessRecord, is_alive
from clusterforge.lab.state import HostRecord, LabState, write_state
from clusterforge.rehearsal.faults import FaultArgError, cable_errors, gpu_ecc, gpu_hot

LAB = Path("inventories/lab")


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["lab", "fault", *args], terminal_width=200)
    return result.exit_code, " ".join(result.output.split())


@pytest.mark.parametrize(("args", "says"), [
    (("errors", "C-99999"), "no cable 'C-99999' in the inventory"),
    (("errors", "C-00020"), "joins two switches (leaf-su01-r0/21, spine01/1)"),
    (("errors", "C-00001", "--rate", "0"), "--rate must be a number above 0"),
    (("errors", "C-00001", "--rate", "nan"), "--rate must be a number above 0"),
    (("errors", "C-00001", "--temp", "90"), "--temp does not apply to errors"),
    (("errors", "C-00001", "C-00002"), "errors takes a cable id, got 2"),
    (("hot", "gpu01"), "hot takes a host and a GPU index, got 1"),
    (("hot", "gpu01", "8"), "gpu01 has 8 GPU(s), indices 0-7: no GPU '8'"),
    (("hot", "gpu01", "--", "-1"), "no GPU '-1'"),
    (("hot", "sm01", "0"), "sm01 has no GPUs in the inventory"),
    (("hot", "gpu99", "0"), "no node 'gpu99' in the inventory"),
    (("hot", "gpu01", "0", "--temp", "400"), "--temp must be a number above 0 and at most 150"),
    (("ecc", "gpu01", "0", "--rate", "5"), "--rate does not apply to ecc"),
    (("ecc", "gpu01", "x"), "no GPU 'x'"),
])
def test_bad_arguments_exit_2_before_any_lab(args: tuple[str, ...], says: str) -> None:
    code, output = _run(str(LAB), *args)
    assert code == 2, output
    assert says in output and "usage: clusterforge lab fault" in output


def test_good_arguments_then_need_a_running_lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTERFORGE_LAB_ROOT", str(tmp_path))
    code, output = _run(str(LAB), "hot", "gpu01", "3")
    assert code == 1 and "no lab is up for inventories/lab" in output


def test_cable_errors_names_both_ends() -> None:
    checked = load_checked(LAB)
    f = cable_errors(checked, "C-00001", 120)
    assert f.hosts == ("gpu01",)
    assert [(v.device, v.port, v.counter) for v in f.values] == [("mlx5_0", 1, "symbol_error"),
                                                                 ("mlx5_0", 1, "port_rcv_errors")]
    assert all(v.per_s == pytest.approx(120 / 3600) for v in f.values)
    assert len(f.notes) == 1 and f.notes[0].startswith("leaf-su01-r0/1: a switch port, not simulated")
    assert gpu_hot(checked, "gpu02", "7").values[0].set == 91.0
    assert gpu_ecc(checked, "gpu02", "7", 8640).values[0].per_s == pytest.approx(0.1)
    with pytest.raises(FaultArgError):
        gpu_ecc(checked, "gpu02", "7", -1)


def _lab(tmp_path: Path) -> LabState:
    state = LabState(lab="cf-t", mode="podman", state_dir=tmp_path, spec_digest="x", network_cidr="198.18.10.0/24",
                     gateway="198.18.10.1", ibsim_address="198.18.10.254", netfile=tmp_path / "f.net",
                     hosts={"gpu01": HostRecord("gpu01", "198.18.10.11", "compute", [("mlx5_0", "gpu01-mlx5_0")])},
                     complete=True)
    write_state(state)  # the driver stops by itself once lab.json is gone
    write_initial(tmp_path, [MonitoredHost("gpu01", (("mlx5_0", 1, "HDR"), ("mlx5_1", 1, "HDR")), "A100-SXM", 2)])
    return state


def _counter(state: LabState, dev: str, name: str) -> int:
    return int((sysfs_root(state.state_dir, "gpu01") / f"class/infiniband/{dev}/ports/1/counters/{name}").read_text())


def _dcgm(state: LabState, metric: str, gpu: int) -> str:
    for line in dcgm_file(state.state_dir, "gpu01").read_text().splitlines():
        if line.startswith(metric + "{") and f'gpu="{gpu}"' in line:
            return line.rsplit(" ", 1)[1]
    raise AssertionError(f"no {metric} line for GPU {gpu}")


def test_faults_drive_the_standins_and_heal_restores(tmp_path: Path) -> None:
    state = _lab(tmp_path)
    (sysfs_root(tmp_path, "gpu01") / "class/infiniband/mlx5_0/ports/1/counters/symbol_error").write_text("7\n")
    before = dcgm_file(tmp_path, "gpu01").read_text()
    mf.inject(state, mf.errors_fault("C-00001", [("gpu01", "mlx5_0", 1)], 3600.0 * 4))  # 4 a second
    mf.inject(state, mf.hot_fault("gpu01", 1, 92.5))
    mf.inject(state, mf.ecc_fault("gpu01", 0, 86400.0 * 10))  # 10 a second
    assert mf.driver_running(tmp_path)
    time.sleep(2.5)
    assert _counter(state, "mlx5_0", "symbol_error") >= 7 + 8  # rising from where it was, with wall time
    assert _counter(state, "mlx5_0", "port_rcv_errors") >= 8
    assert _counter(state, "mlx5_1", "symbol_error") == 0  # the other HCA untouched
    assert _dcgm(state, "DCGM_FI_DEV_MEMORY_TEMP", 1) == "92.5"
    assert _dcgm(state, "DCGM_FI_DEV_MEMORY_TEMP", 0) == "45"
    assert int(_dcgm(state, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", 0)) >= 20
    assert _dcgm(state, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", 1) == "0"
    listed = mf.faults(tmp_path)
    assert [(f["kind"], f["target"], f["hosts"]) for f in listed] == [
        ("errors", "C-00001", ["gpu01"]), ("hot", "gpu01 1", ["gpu01"]), ("ecc", "gpu01 0", ["gpu01"])]
    rec = ProcessRecord.from_json(json.loads((tmp_path / mf.JOURNAL).read_text())["driver"])
    assert mf.heal(tmp_path) == 3
    assert not is_alive(rec) and mf.faults(tmp_path) == []
    assert _counter(state, "mlx5_0", "symbol_error") == 7
    assert dcgm_file(tmp_path, "gpu01").read_text() == before


def test_a_second_fault_on_the_same_value_continues(tmp_path: Path) -> None:
    state = _lab(tmp_path)
    mf.inject(state, mf.hot_fault("gpu01", 0, 90))
    mf.inject(state, mf.hot_fault("gpu01", 0, 95))
    assert _dcgm(state, "DCGM_FI_DEV_MEMORY_TEMP", 0) == "95"
    assert mf.heal(tmp_path) == 2
    assert _dcgm(state, "DCGM_FI_DEV_MEMORY_TEMP", 0) == "45"  # the first original, not the 90 in between


def test_a_driver_tick_waits_for_the_journals_lock(tmp_path: Path) -> None:
    """`lab fault` writes the journal and its values under the lock each driver tick takes: a tick never writes a
    value from a journal read before a newer fault's (make test once caught 90 written back over a second
    fault's 95)."""
    from clusterforge.lab import fault_driver

    state = _lab(tmp_path)
    mf.inject(state, mf.hot_fault("gpu01", 0, 90))
    assert mf.driver_running(tmp_path)
    path = dcgm_file(tmp_path, "gpu01")
    with fault_driver.locked(mf.journal_path(tmp_path)):
        lines = path.read_text().splitlines(keepends=True)
        at = next(i for i, ln in enumerate(lines) if ln.startswith("DCGM_FI_DEV_MEMORY_TEMP{") and 'gpu="0"' in ln)
        lines[at] = lines[at].rsplit(" ", 1)[0] + " 77\n"
        path.write_text("".join(lines))
        time.sleep(2.5 * fault_driver.TICK_S)  # ticks due: each waits for the lock
        assert _dcgm(state, "DCGM_FI_DEV_MEMORY_TEMP", 0) == "77"
    deadline = time.monotonic() + 10
    while _dcgm(state, "DCGM_FI_DEV_MEMORY_TEMP", 0) != "90" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _dcgm(state, "DCGM_FI_DEV_MEMORY_TEMP", 0) == "90"  # the next tick, once the lock is free
    assert mf.heal(tmp_path) == 1


def test_the_driver_stops_when_the_lab_is_gone(tmp_path: Path) -> None:
    state = _lab(tmp_path)
    mf.inject(state, mf.hot_fault("gpu01", 0, 90))
    rec = ProcessRecord.from_json(json.loads((tmp_path / mf.JOURNAL).read_text())["driver"])
    (tmp_path / "lab.json").unlink()
    deadline = time.monotonic() + 5
    while is_alive(rec) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not is_alive(rec)


def test_missing_standin_changes_nothing(tmp_path: Path) -> None:
    state = _lab(tmp_path)
    dcgm_file(tmp_path, "gpu01").unlink()
    with pytest.raises(FaultError, match="monitoring stand-in is not there"):
        mf.inject(state, mf.hot_fault("gpu01", 0, 90))
    assert mf.faults(tmp_path) == [] and not mf.driver_running(tmp_path)
    with pytest.raises(FaultError, match="gpu05: no container in this lab"):
        mf.inject(state, mf.hot_fault("gpu05", 0, 90))
