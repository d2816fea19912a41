"""Firmware pins: validate reads mlxfwmanager --query (real captures) against the pin of each card's model."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from clusterforge.api import Checked, load_checked
from clusterforge.collect.store import Observations
from clusterforge.parse import mlxfwmanager
from clusterforge.validate.firmware import check_firmware
from clusterforge.validate.run import validate

ROOT = Path(__file__).resolve().parents[3]
CAPTURES = ROOT / "tests" / "fixtures" / "mlxfwmanager"
AWS = "aws-ec2-mlxup-4.30-2xcx7-mcx755106as-ndr200"  # the query of two ConnectX-7 needing an update


def _capture(name: str) -> str:
    (path,) = CAPTURES.glob(f"{name}-*.txt")
    return path.read_text(encoding="utf-8")


def _cx7_prod(tmp: Path, version: str, psids: str = "[]") -> Checked:
    """prod with ConnectX-7 HCAs pinned at `version` (the captures are ConnectX-7 cards)."""
    env = tmp / "prod"
    shutil.copytree(ROOT / "inventories" / "prod", env)
    hw = env / "hardware.yaml"
    hw.write_text(hw.read_text().replace("model: ConnectX-6", "model: ConnectX-7"))
    (env / "firmware.yaml").write_text(f"firmware:\n  hcas:\n    - {{model: ConnectX-7, version: {version}, "
                                       f"psids: {psids}}}\n")
    return load_checked(env)


def test_two_cards_behind_their_pin_and_of_another_board(tmp_path: Path) -> None:
    checked = _cx7_prod(tmp_path, "28.43.1014", "[MT_0000000838]")
    found = check_firmware(checked.index, "gpu0001", mlxfwmanager.parse(_capture(AWS)))
    assert sorted(f.rule for f in found) == ["FW-DRIFT", "FW-DRIFT", "FW-PSID", "FW-PSID"]
    drift = next(f for f in found if f.rule == "FW-DRIFT")
    assert (drift.expected, drift.observed) == ("28.43.1014", "28.40.1000")
    assert "gpu0001 mlx5_0/mlx5_1 (ConnectX-7, /dev/mst/mt4129_pciconf1)" in drift.message
    assert "day-2 plan" in drift.action
    psid = next(f for f in found if f.rule == "FW-PSID")
    assert psid.observed == "MT_0000000834" and "do not cross-flash" in psid.action


def test_a_flashed_image_not_yet_running_asks_for_a_reset(tmp_path: Path) -> None:
    checked = _cx7_prod(tmp_path, "28.47.1026")
    (found,) = check_firmware(checked.index, "gpu0002", mlxfwmanager.parse(_capture("csegpu")))
    assert found.rule == "FW-DRIFT" and found.observed == "28.46.3048"
    assert "has not been reset" in found.message and "mlxfwreset -d 0000:8e:00.0 reset" in found.action


def test_a_card_running_its_pin_with_another_image_flashed_is_told_before_a_reset(tmp_path: Path) -> None:
    # the real capture flashed 28.47.1026 and still runs 28.46.3048: pinned at what it runs, its next reset drifts
    checked = _cx7_prod(tmp_path, "28.46.3048")
    (found,) = check_firmware(checked.index, "gpu0002", mlxfwmanager.parse(_capture("csegpu")))
    assert found.rule == "FW-DRIFT" and found.observed == "28.47.1026" and "its next reset" in found.message
    assert "--reflash" in found.action and "--version 28.46.3048" in found.action


def test_cards_at_their_pin_are_quiet(tmp_path: Path) -> None:
    checked = _cx7_prod(tmp_path, "28.40.1000", "[MT_0000000834]")
    assert check_firmware(checked.index, "gpu0001", mlxfwmanager.parse(_capture(AWS))) == []


def test_a_card_of_an_undeclared_model_is_not_pinned(tmp_path: Path) -> None:
    checked = _cx7_prod(tmp_path, "28.40.1000")
    cx6lx = mlxfwmanager.parse(_capture("empovit-mlxup-query"))  # a CX-6 Lx NIC
    assert check_firmware(checked.index, "gpu0001", cx6lx) == []


def test_validate_reads_the_saved_output(tmp_path: Path) -> None:
    checked = _cx7_prod(tmp_path, "28.43.1014")
    obs = Observations(hosts={"gpu0003": {"mlxfwmanager": _capture(AWS)}})
    report = validate(checked.index, obs)
    drift = [f for f in report.findings if f.rule == "FW-DRIFT"]
    assert {f.subject for f in drift} == {"gpu0003"}
    assert drift[0].where is None and drift[0].inventory == ("firmware", "hcas", 0)


def test_collect_asks_for_mlxfwmanager_only_where_firmware_is_pinned() -> None:
    from clusterforge.collect.plan import default_targets

    prod = load_checked(ROOT / "inventories" / "prod").index
    lab = load_checked(ROOT / "inventories" / "lab").index
    prod_hosts, _ = default_targets(prod, dict.fromkeys(prod.addresses.mgmt, "x"))
    lab_hosts, _ = default_targets(lab, dict.fromkeys(lab.addresses.mgmt, "x"))
    assert all("mlxfwmanager" in t.commands for t in prod_hosts if prod.hardware[t.host].hcas)
    assert not any("mlxfwmanager" in t.commands for t in lab_hosts)


@pytest.mark.parametrize(("yaml_text", "message"), [
    ("firmware:\n  hcas:\n    - {model: ConnectX-9, version: 1.2.3}\n", "unknown HCA/DPU model 'ConnectX-9'"),
    ("firmware:\n  hcas:\n    - {model: ConnectX-7, version: 1.2.3}\n", "'ConnectX-7' is pinned but no HCA/DPU"),
    ("firmware:\n  switches:\n    - {model: QM8700, version: 27.2010.1000}\n"
     "    - {model: QM8700, version: 27.2010.1000}\n", "'QM8700' is pinned twice"),
])
def test_check_refuses_a_pin_that_names_nothing_real(tmp_path: Path, yaml_text: str, message: str) -> None:
    from clusterforge.util.errors import InventoryInvalid

    env = tmp_path / "prod"
    shutil.copytree(ROOT / "inventories" / "prod", env)
    (env / "firmware.yaml").write_text(yaml_text)
    with pytest.raises(InventoryInvalid) as exc:
        load_checked(env)
    assert any(message in str(i) and str(i).startswith(f"{env / 'firmware.yaml'}:") for i in exc.value.issues)


def _lab_with_dpu(tmp: Path, pin: str) -> Path:
    """The lab with a BlueField-3 (mlx5_8) on every GPU node and `pin` its firmware pin."""
    env = tmp / "lab"
    shutil.copytree(ROOT / "inventories" / "lab", env)
    hw = env / "hardware.yaml"
    data = yaml.safe_load(hw.read_text())
    profile = next(p for p in data["profiles"] if p["name"] == "gpu-node")
    profile["dpus"] = [{"name": "mlx5_8", "model": "BlueField-3", "ports": [{"port": 1, "rate": "NDR"}]}]
    hw.write_text(yaml.safe_dump(data, sort_keys=False))
    (env / "firmware.yaml").write_text(f"firmware:\n  hcas:\n    - {pin}\n")
    return env


def test_a_dpu_model_in_use_may_be_pinned(tmp_path: Path) -> None:
    """A BlueField pin is a pin of a model the inventory uses when a node has one as a DPU (a day-2 bump flashes it
    and reboots the host to activate it, docs/firmware.md)."""
    env = _lab_with_dpu(tmp_path, "{model: BlueField-3, version: 32.43.1014}")
    assert load_checked(env).inv.firmware is not None


def test_a_dpu_behind_its_pin_is_drift(tmp_path: Path) -> None:
    """A BlueField-3 on a GPU node, pinned: its firmware is read and judged like an HCA's (it was skipped: only
    the HCAs were matched). The input is the real BlueField capture with its Device Type changed to BlueField3
    (constructed: no BlueField-3 capture with a source exists in the samples)."""
    checked = load_checked(_lab_with_dpu(tmp_path, "{model: BlueField-3, version: 32.43.1014, psids: [MT_0000000884]}"))
    text = _capture("bluefield1").replace("Device Type:      BlueField\n", "Device Type:      BlueField3\n")
    found = check_firmware(checked.index, "gpu01", mlxfwmanager.parse(text))
    assert sorted((f.rule, f.subject) for f in found) == [("FW-DRIFT", "gpu01 mlx5_8"), ("FW-PSID", "gpu01 mlx5_8")]
    drift = next(f for f in found if f.rule == "FW-DRIFT")
    assert (drift.expected, drift.observed) == ("32.43.1014", "18.26.4012") and "BlueField-3" in drift.message
    # the unchanged capture (a BlueField-1, which the inventory does not declare) is not this pin's
    assert check_firmware(checked.index, "gpu01", mlxfwmanager.parse(_capture("bluefield1"))) == []
