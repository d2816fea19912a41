"""`clusterforge firmware flash|activate` (firmware/flash.py, cli/firmware.py) over a fake runner that answers
`mlxfwmanager --query` with the real captures in tests/fixtures/mlxfwmanager: query first, never cross-flash a
PSID the pin does not list, skip cards at the version, refuse a downgrade without --allow-downgrade, a failed host
never stops the others, --dry-run connects to nothing; and no deploy code can flash."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from cf_lab_inventory import LAB
from clusterforge.cli import firmware as cli_firmware
from clusterforge.cli.main import app
from clusterforge.firmware.flash import FlashJob, Ran, each, flash_host, reboot_host, reset_host, staged_path

ROOT = Path(__file__).resolve().parents[3]
FIX = ROOT / "tests" / "fixtures" / "mlxfwmanager"
# two ConnectX-7 MCX755106AS-HEA, PSID MT_0000000834, FW 28.40.1000 (update required), no Base GUID
AWS = (FIX / "aws-ec2-mlxup-4.30-2xcx7-mcx755106as-ndr200-update-required.txt").read_text()
# one ConnectX-7 MCX75310AAS-NEA, PSID MT_0000000838, flashed 28.47.1026, running 28.46.3048 (reset pending)
PENDING = (FIX / "csegpu-mlxup-cx7-mcx75310aas-ndr-fw-pending-reset-running-differs.txt").read_text()
# one ConnectX-6 Lx (Device Type ConnectX6LX): not a ConnectX-6
CX6LX = (FIX / "empovit-mlxup-query-cx6lx-mcx631102as-update-required.txt").read_text()
# CONSTRUCTED, not a capture: PENDING with its 'FW (Running)' row removed, as the query reads once the reset ran
RESET_DONE = "\n".join(line for line in PENDING.splitlines() if "FW (Running)" not in line) + "\n"
IMAGE = "/var/lib/clusterforge/firmware/fw-ConnectX7-rel-28_43_1014.bin"
# the same two cards through `mlxup -u`: the query with 28.43.1014 available, then each one's log ending in Done
BURNED = (FIX / "aws-ec2-mlxup-4.30-2xcx7-mcx755106as-burn-log-redraw-artifacts-author-abridged.txt").read_text()
# PENDING's card (0000:8e:00.0) through `mlxup -d ... -u`: 28.47.1026 available and burned
REBURNED = (FIX / "csegpu1-mlxup-d-cx7-mcx75310aas-ndr-burn-log-28.46-to-28.47.txt").read_text()
# CONSTRUCTED, not a capture: BURNED with an older image available (no real downgrade's report is here)
DOWNGRADED = BURNED.replace("28.43.1014", "28.39.1002")


class Fake:
    """Answers each host's query from a capture and a flash (`-u`) with `burned` (a real update report); every
    other command exits `rc[argv[0]]` (default 0) with no output (CONSTRUCTED: the tool reads only their exit
    codes). Records every call."""

    def __init__(self, queries: dict[str, str | list[str]], rc: dict[str, int] | None = None,
                 down: set[str] | None = None, burned: str = BURNED):
        self.burned = burned
        self.queries = {h: [q] if isinstance(q, str) else list(q) for h, q in queries.items()}
        self.rc = rc or {}
        self.down = down or set()
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def __call__(self, host: str, argv: tuple[str, ...]) -> Ran:
        self.calls.append((host, argv))
        if host in self.down:
            return Ran(255, "", "ssh: connect to host 10.0.0.9 port 22: No route to host")
        if argv == ("mlxfwmanager", "--query"):
            texts = self.queries[host]
            return Ran(0, texts.pop(0) if len(texts) > 1 else texts[0])
        if argv[:1] == ("mlxfwmanager",) and "-u" in argv:
            return Ran(self.rc.get(argv[0], 0), self.burned)
        return Ran(self.rc.get(argv[0], 0), "")

    def flashes(self, host: str | None = None) -> list[tuple[str, ...]]:
        return [a for h, a in self.calls if a[:1] == ("mlxfwmanager",) and "-u" in a and host in (None, h)]


def _job(**kw: object) -> FlashJob:
    base: dict[str, object] = {"model": "ConnectX-7", "device_type": "ConnectX7", "version": "28.43.1014",
                               "image": IMAGE, "psids": ("MT_0000000834",)}
    return FlashJob(**{**base, **kw})  # type: ignore[arg-type]


def test_each_card_is_queried_then_flashed_from_the_staged_image() -> None:
    fake = Fake({"gpu01": AWS})
    report = flash_host("gpu01", _job(), fake)
    assert report.ok, report.lines
    assert fake.calls[0] == ("gpu01", ("mlxfwmanager", "--query"))
    assert fake.calls[1] == ("gpu01", ("test", "-f", IMAGE))
    assert fake.flashes() == [("mlxfwmanager", "-d", dev, "-u", "-i", IMAGE, "-y")
                              for dev in ("/dev/mst/mt4129_pciconf1", "/dev/mst/mt4129_pciconf0")]
    assert any("flashed 28.40.1000 -> 28.43.1014" in line for line in report.lines)


def test_a_psid_the_pin_does_not_list_is_never_flashed() -> None:
    fake = Fake({"gpu01": AWS})
    report = flash_host("gpu01", _job(psids=("MT_0000000838",)), fake)
    assert not report.ok and fake.flashes() == []
    assert any("PSID MT_0000000834 is not one the pin allows (MT_0000000838): never cross-flashed" in line
               for line in report.lines)


def test_a_downgrade_is_refused_unless_allowed_then_forced() -> None:
    fake = Fake({"gpu01": AWS})
    report = flash_host("gpu01", _job(version="28.39.1002"), fake)
    assert not report.ok and fake.flashes() == []
    assert any("28.40.1000 -> 28.39.1002 is a downgrade: refused without --allow-downgrade" in line
               for line in report.lines)
    fake = Fake({"gpu01": AWS}, burned=DOWNGRADED)
    assert flash_host("gpu01", _job(version="28.39.1002", allow_downgrade=True), fake).ok
    assert fake.flashes() and all(a[-1] == "--force" for a in fake.flashes())


def test_a_card_at_the_version_is_skipped_and_its_pending_reset_said() -> None:
    fake = Fake({"gpu01": PENDING})
    report = flash_host("gpu01", _job(psids=("MT_0000000838",), version="28.47.1026"), fake)
    assert report.ok and fake.flashes() == []
    assert any("already at 28.47.1026, skipped; it runs 28.46.3048 until activated" in line for line in report.lines)
    fake = Fake({"gpu01": PENDING}, burned=REBURNED)  # --reflash: flashed again, forced
    assert flash_host("gpu01", _job(psids=("MT_0000000838",), version="28.47.1026", reflash=True), fake).ok
    assert fake.flashes() == [("mlxfwmanager", "-d", "0000:8e:00.0", "-u", "-i", IMAGE, "-y", "--force")]


def test_a_flash_is_taken_only_as_mlxfwmanager_reports_it() -> None:
    """Exit 0 alone is no flash: the report must say Done for the card, and the image it burned be the pin's."""
    report = flash_host("gpu01", _job(), Fake({"gpu01": AWS}, burned=DOWNGRADED))  # another image was staged
    assert not report.ok
    assert "the staged image is 28.39.1002, not the pin's 28.43.1014" in report.lines[-1]
    report = flash_host("gpu01", _job(), Fake({"gpu01": AWS}, burned=""))
    assert not report.ok and "not mlxfwmanager's update report" in report.lines[-1]
    cut = BURNED.split("Device #1: Updating FW")[0]  # CONSTRUCTED: the report cut before any device's log
    report = flash_host("gpu01", _job(), Fake({"gpu01": AWS}, burned=cut))
    assert not report.ok and "did not report the burn done (no update log for it)" in report.lines[-1]
    report = flash_host("gpu01", _job(), Fake({"gpu01": AWS}, burned=REBURNED))  # a report of another card
    assert not report.ok and "names no device /dev/mst/mt4129_pciconf1" in report.lines[-1]


def test_no_card_of_the_model_an_unstaged_image_and_a_failed_flash_fail_the_host() -> None:
    fake = Fake({"gpu01": CX6LX})
    report = flash_host("gpu01", _job(model="ConnectX-6", device_type="ConnectX6"), fake)
    assert not report.ok and "no ConnectX-6 (ConnectX6) card (mlxfwmanager shows: ConnectX6LX)" in report.lines[-1]
    fake = Fake({"gpu01": AWS}, rc={"test": 1})
    report = flash_host("gpu01", _job(), fake)
    assert not report.ok and fake.flashes() == [] and f"the image is not staged at {IMAGE}" in report.lines[-1]
    fake = Fake({"gpu01": AWS}, rc={"mlxfwmanager": 1})
    report = flash_host("gpu01", _job(), fake)
    assert not report.ok and len(fake.flashes()) == 1  # the first card failed: the second is not tried


def test_a_failed_host_never_stops_the_others() -> None:
    fake = Fake({"gpu01": AWS, "gpu03": AWS}, down={"gpu02"})

    def boom(host: str) -> object:
        raise RuntimeError("a bug")

    reports = each(["gpu01", "gpu02", "gpu03"], lambda h: flash_host(h, _job(), fake), parallel=2)
    assert [r.ok for r in reports] == [True, False, True]
    assert "gpu02: unreachable: ssh: connect to host" in reports[1].lines[-1]
    crashed = each(["gpu01"], boom, parallel=1)  # type: ignore[arg-type]
    assert not crashed[0].ok and "RuntimeError: a bug" in crashed[0].lines[0]


def test_mlxfwreset_runs_each_pending_card_and_proves_it_runs() -> None:
    fake = Fake({"gpu01": [PENDING, RESET_DONE]})
    report = reset_host("gpu01", "ConnectX7", fake)
    assert report.ok, report.lines
    assert ("gpu01", ("mlxfwreset", "-d", "0000:8e:00.0", "-y", "reset")) in fake.calls
    fake = Fake({"gpu01": PENDING})  # the reset did not take: still the old image
    report = reset_host("gpu01", "ConnectX7", fake)
    assert not report.ok and "0000:8e:00.0 runs 28.46.3048, flashed 28.47.1026" in report.lines[-1]
    fake = Fake({"gpu01": AWS})  # nothing pending: nothing reset
    assert reset_host("gpu01", "ConnectX7", fake).ok and not any(a[0] == "mlxfwreset" for _, a in fake.calls)


def test_a_reboot_is_waited_for_then_checked() -> None:
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    class Back(Fake):
        def __call__(self, host: str, argv: tuple[str, ...]) -> Ran:
            if argv == ("true",) and now[0] < 30:
                self.calls.append((host, argv))
                return Ran(255, "", "Connection refused")
            return super().__call__(host, argv)

    fake = Back({"gpu01": RESET_DONE})
    report = reboot_host("gpu01", fake, 900, sleep=sleep, clock=lambda: now[0])
    assert report.ok and ("gpu01", ("systemctl", "reboot")) in fake.calls
    assert sum(1 for _, a in fake.calls if a == ("true",)) >= 2
    now[0] = 0.0
    report = reboot_host("gpu01", Back({"gpu01": RESET_DONE}), 15, sleep=sleep, clock=lambda: now[0])
    assert not report.ok and "not back 15 s after the reboot" in report.lines[-1]
    now[0] = 100.0
    assert not reboot_host("gpu01", Fake({"gpu01": PENDING}), 900, sleep=sleep, clock=lambda: now[0]).ok


def test_the_staged_path_is_the_pin_images_file_name() -> None:
    assert staged_path("https://mirror.example/fw/fw-CX7.bin?x=1") == "/var/lib/clusterforge/firmware/fw-CX7.bin"
    assert staged_path("firmware/fw-CX6.bin", "/srv/fw") == "/srv/fw/fw-CX6.bin"


# -- the command ------------------------------------------------------------------------------------------
@pytest.fixture()
def cx7_lab(tmp_path: Path) -> Path:
    """The lab with ConnectX-7 HCAs (HDR ports) pinned at 28.43.1014 for PSID MT_0000000834."""
    env = tmp_path / "lab"
    shutil.copytree(LAB, env)
    hw = env / "hardware.yaml"
    hw.write_text(hw.read_text().replace("ConnectX-6", "ConnectX-7"))
    (env / "firmware.yaml").write_text(yaml.safe_dump({"firmware": {"hcas": [
        {"model": "ConnectX-7", "version": "28.43.1014", "psids": ["MT_0000000834"],
         "image": "https://mirror.example/fw/fw-ConnectX7-rel-28_43_1014.bin"}]}}))
    return env


def _with_fake(monkeypatch: pytest.MonkeyPatch, fake: Callable[[str, tuple[str, ...]], Ran] | None) -> None:
    def make(env: Path, checked: object) -> Callable[[str, tuple[str, ...]], Ran]:
        if fake is None:
            raise AssertionError("connected during a dry run")
        return fake

    monkeypatch.setattr(cli_firmware, "make_runner", make)


def test_flash_reports_each_host_and_exits_1_when_one_failed(cx7_lab: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = Fake({"gpu01": AWS, "gpu03": AWS}, down={"gpu02"})
    _with_fake(monkeypatch, fake)
    result = CliRunner().invoke(app, ["firmware", "flash", str(cx7_lab), "--limit", "gpu[01-03]", "--model",
                                      "ConnectX-7", "--version", "28.43.1014"])
    assert result.exit_code == 1, result.output
    assert len(fake.flashes("gpu01")) == 2 and len(fake.flashes("gpu03")) == 2
    assert "gpu02: unreachable" in result.output
    assert "2 host(s) flashed or at the version, 1 failed: gpu02" in result.output
    assert "Traceback" not in result.output


def test_flash_format_json_is_one_document(cx7_lab: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = Fake({"gpu01": AWS}, down={"gpu02"})
    _with_fake(monkeypatch, fake)
    result = CliRunner().invoke(app, ["firmware", "flash", str(cx7_lab), "--limit", "gpu[01-02]", "--model",
                                      "ConnectX-7", "--version", "28.43.1014", "--format", "json"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["failed"] == ["gpu02"] and [(h["host"], h["ok"]) for h in doc["hosts"]] == [
        ("gpu01", True), ("gpu02", False)]
    _with_fake(monkeypatch, None)
    result = CliRunner().invoke(app, ["firmware", "activate", str(cx7_lab), "--limit", "gpu01", "--how", "reboot",
                                      "--dry-run", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["dry_run"] is True and [h["host"] for h in doc["hosts"]] == ["gpu01"]
    assert "systemctl reboot" in doc["hosts"][0]["would_run"]


def test_flash_dry_run_connects_to_nothing(cx7_lab: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _with_fake(monkeypatch, None)
    result = CliRunner().invoke(app, ["firmware", "flash", str(cx7_lab), "--limit", "gpu[01-02]", "--model",
                                      "ConnectX-7", "--version", "28.43.1014", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert result.output.count("would run mlxfwmanager --query") == 2
    assert f"-i {IMAGE} -y" in result.output and "(MT_0000000834)" in result.output


@pytest.mark.parametrize(("args", "message"), [
    (["--version", "28.44.1000"], "--version 28.44.1000: firmware.hcas[0] (ConnectX-7) pins 28.43.1014"),
    (["--version", "28.43.1014", "--allow-downgrade"], "firmware.allow_downgrade is false"),
    (["--version", "28.43.1014", "--limit", "gpu99"], "--limit: not a node of the inventory: gpu99"),
    (["--version", "28.43.1014", "--model", "BlueField-3"], "--model BlueField-3: not pinned in"),
    (["--version", "28.43.1014", "--switch", "spine01"], "--model ConnectX-7: not pinned in"),
])
def test_flash_refuses_what_the_inventory_does_not_say_in_one_line(cx7_lab: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    args: list[str], message: str) -> None:
    _with_fake(monkeypatch, None)
    base = {"--limit": "gpu01", "--model": "ConnectX-7"}
    argv = ["firmware", "flash", str(cx7_lab), *args]
    for flag, value in base.items():
        if flag not in args:
            argv += [flag, value]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], result.output


def test_activate_by_mlxfwreset_and_the_catalogs_refusal(cx7_lab: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = Fake({"gpu01": [PENDING, RESET_DONE]})
    _with_fake(monkeypatch, fake)
    result = CliRunner().invoke(app, ["firmware", "activate", str(cx7_lab), "--limit", "gpu01", "--model",
                                      "ConnectX-7", "--how", "mlxfwreset"])
    assert result.exit_code == 0, result.output
    assert ("gpu01", ("mlxfwreset", "-d", "0000:8e:00.0", "-y", "reset")) in fake.calls
    result = CliRunner().invoke(app, ["firmware", "activate", str(cx7_lab), "--limit", "gpu01", "--how",
                                      "mlxfwreset"])
    assert result.exit_code == 2 and "--how mlxfwreset needs --model" in result.output


def test_no_deploy_code_flashes() -> None:
    """Deploy never flashes: no firmware tool in the deploy package, roles or templates, and the flash code is
    reached only from its command."""
    words = re.compile(r"mlxfwreset|mlxfwmanager\b[^\n]*\s-u\b|flint\b[^\n]*\bburn\b|firmware\.(flash|switch)\b|"
                       r"firmware flash")
    found = [str(p.relative_to(ROOT)) for base in ("src/clusterforge/deploy", "roles", "templates", "deploy")
             for p in sorted((ROOT / base).rglob("*")) if p.is_file() and p.suffix not in (".pyc",)
             and words.search(p.read_text(errors="replace"))]
    assert found == []
    flash_code = ROOT / "src" / "clusterforge" / "firmware"  # the hosts' cards, an unmanaged switch in-band
    users = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "src" / "clusterforge").rglob("*.py")
                   if re.search(r"\bfirmware\.(flash|switch)\b|from \.(flash|switch) import", p.read_text())
                   and not p.is_relative_to(flash_code))
    assert users == ["src/clusterforge/cli/firmware.py"]
