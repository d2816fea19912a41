"""The lab's LAB-ONLY mlxfwmanager/mlxfwreset stand-ins (lab/firmware_standin.py), run for real here as the
lab runs them, driven by the same flash and reset code (firmware/flash.py) that `clusterforge firmware` runs over
SSH: its query parses with the real parser, a flash leaves a reset pending, a reset makes it run; a PSID the
image does not list and another card's image are refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from clusterforge.api import load_checked
from clusterforge.firmware.flash import FlashJob, Ran, flash_host, reset_host
from clusterforge.lab import firmware_standin as fw
from clusterforge.parse.mlxfwmanager import parse
from clusterforge.rehearsal.standins import cards as fw_cards

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def host(tmp_path: Path) -> tuple[Path, Path]:
    """The stand-ins (their state in tmp) and gpu0001's cards from prod's pin."""
    state = tmp_path / "cards.json"
    index = load_checked(ROOT / "inventories" / "prod").index
    state.write_text(json.dumps(fw_cards(index, "gpu0001")))
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in fw.TOOLS:
        (bin_ / tool).write_text(fw.STANDIN.replace(fw.STATE, str(state)))
    return bin_, state


def _runner(bin_: Path):  # type: ignore[no-untyped-def]
    def run(_host: str, argv: tuple[str, ...]) -> Ran:
        cmd = [sys.executable, str(bin_ / argv[0]), *argv[1:]] if argv[0] in fw.TOOLS else list(argv)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
        return Ran(p.returncode, p.stdout, p.stderr)
    return run


def test_a_bump_flashes_then_resets_each_card(host: tuple[Path, Path], tmp_path: Path) -> None:
    bin_, state = host
    run = _runner(bin_)
    before = parse(run("gpu0001", ("mlxfwmanager", "--query")).out)
    n = len(load_checked(ROOT / "inventories" / "prod").index.hardware["gpu0001"].hcas)
    assert n >= 2 and len(json.loads(state.read_text())) == n
    assert [(d.device_type, d.fw, d.fw_running, d.reset_pending) for d in before] == \
        [("ConnectX6", "20.39.2048", "20.39.2048", False)] * n  # prod's ConnectX-6 cards, pinned 20.39.2048
    image = tmp_path / "fw-ConnectX6-rel-20_40_1000.bin"
    image.write_text(fw.lab_image("ConnectX6", "20.40.1000"))
    job = FlashJob("ConnectX-6", "ConnectX6", "20.40.1000", str(image))
    report = flash_host("gpu0001", job, run)
    assert report.ok, report.lines
    pending = parse(run("gpu0001", ("mlxfwmanager", "--query")).out)
    assert {(d.fw, d.fw_running, d.reset_pending) for d in pending} == {("20.40.1000", "20.39.2048", True)}
    again = flash_host("gpu0001", job, run)  # re-run: every card already at the version, nothing burnt
    assert again.ok and all("already at 20.40.1000, skipped" in line for line in again.lines), again.lines
    report = reset_host("gpu0001", "ConnectX6", run)
    assert report.ok, report.lines
    assert {(d.fw, d.fw_running) for d in parse(run("gpu0001", ("mlxfwmanager", "--query")).out)} == \
        {("20.40.1000", "20.40.1000")}


def test_a_psid_or_card_the_image_is_not_for_is_refused(host: tuple[Path, Path], tmp_path: Path) -> None:
    bin_, state = host
    run = _runner(bin_)
    other = tmp_path / "other.bin"
    other.write_text(fw.lab_image("ConnectX6", "20.40.1000", ["MT_0000000999"]))
    p = run("gpu0001", ("mlxfwmanager", "-d", "0000:3b:00.0", "-u", "-i", str(other), "-y"))
    assert p.rc == 1 and "PSID mismatch" in p.err
    cx7 = tmp_path / "cx7.bin"
    cx7.write_text(fw.lab_image("ConnectX7", "28.43.1014"))
    assert run("gpu0001", ("mlxfwmanager", "-d", "0000:3b:00.0", "-u", "-i", str(cx7), "-y")).rc == 1
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x7fELF")
    assert "not a firmware image" in run("gpu0001", ("mlxfwmanager", "-d", "0000:3b:00.0", "-u", "-i", str(junk),
                                                      "-y")).err
    assert run("gpu0001", ("mlxfwmanager", "--help")).rc == 2
    assert {c["fw"] for c in json.loads(state.read_text())} == {"20.39.2048"}  # nothing burnt


def test_a_host_without_a_pinned_card_gets_none() -> None:
    index = load_checked(ROOT / "inventories" / "lab").index  # the lab pins no firmware
    assert fw_cards(index, "gpu01") == []
