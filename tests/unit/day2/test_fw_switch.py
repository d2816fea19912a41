"""`clusterforge firmware flash|activate --switch` (firmware/switch.py, cli/firmware.py) against the lab's LAB-ONLY
in-band `flint` stand-in (lab/firmware_standin.py), run for real here as the lab runs it on the fabric node.

What stands in for the fabric here (CONSTRUCTED): `ibnetdiscover` answers with clusterforge.sim's render of the
inventory, and a small `smpquery` script answers `nodedesc`/`nodeinfo <LID>` from that render's switches (in the
lab the real smpquery asks ibsim: tests/lab/test_firmware_lab.py). The lab inventory's spines and first leaf are
made QM8790s (unmanaged: flashed in-band) and pinned."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from cf_lab_inventory import LAB
from clusterforge.api import load_checked
from clusterforge.cli import firmware as cli_firmware
from clusterforge.cli.main import app
from clusterforge.firmware.flash import Ran
from clusterforge.firmware.switch import SwitchJob, flash_switch, locate, reset_switch
from clusterforge.lab import firmware_standin as fw
from clusterforge.lab.firmware_standin import lab_image
from clusterforge.parse import ibnetdiscover
from clusterforge.parse.flint_q import parse as parse_flint
from clusterforge.rehearsal.standins import switches as fw_switches
from clusterforge.sim import ibnetdiscover as sim

OLD, NEW = "27.2010.6102", "27.2012.1010"
UNMANAGED = ("spine01", "spine02", "leaf-su01-r0")
SMPQUERY = '''#!/usr/bin/python3
# CONSTRUCTED for the test: answers smpquery nodedesc|nodeinfo <LID> from a map of the simulated fabric
import json, sys
args = [a for a in sys.argv[1:] if not a.startswith("-")]
attr, lid = args[-2], args[-1]
node = json.load(open(@MAP@)).get(lid)
if node is None:
    sys.exit("ibwarn: [1] mad_rpc: _do_madrpc failed; dport (Lid %s)" % lid)
if attr == "nodedesc":  # the rows as the real smpquery prints them (the lab's, over ibsim)
    print("Node Description:.........................%s" % node[0])
else:
    print("# Node info: Lid %s" % lid)
    print("NodeType:........................Switch")
    print("Guid:............................%s" % node[1])
'''


def _pin(env: Path, version: str, psids: list[str] | None = None) -> None:
    (env / "firmware.yaml").write_text(yaml.safe_dump({"firmware": {"switches": [
        {"model": "QM8790", "version": version, "psids": psids or [],
         "image": f"firmware/fw-QM8790-rel-{version.replace('.', '_')}.bin"}]}}))


class Fabric:
    """The fabric node's tools, run here: the stand-in flint (its state in tmp), the constructed smpquery."""

    def __init__(self, tmp: Path):
        self.env = tmp / "lab"
        shutil.copytree(LAB, self.env)
        fabric = self.env / "fabric.yaml"
        text = fabric.read_text()
        for name in UNMANAGED:
            text = text.replace(f"{{name: {name}, model: QM8700", f"{{name: {name}, model: QM8790")
        fabric.write_text(text)
        _pin(self.env, OLD)
        self.index = load_checked(self.env).index
        assert {s.name for s in self.index.inv.switches if s.model == "QM8790"} == set(UNMANAGED)
        self.discovery = sim.render(self.index, sim.from_index(self.index))
        self.bin = tmp / "bin"
        self.bin.mkdir()
        self.state = tmp / "switches.json"
        self.state.write_text(json.dumps(fw_switches(self.index)))
        (self.bin / "flint").write_text(fw.SWITCH_STANDIN.replace(fw.SWITCH_STATE, str(self.state)))
        lids = {str(sw.lid): (sw.name, sw.guid) for sw in ibnetdiscover.parse(self.discovery).switches}
        (tmp / "lids.json").write_text(json.dumps(lids))
        (self.bin / "smpquery").write_text(SMPQUERY.replace("@MAP@", repr(str(tmp / "lids.json"))), encoding="utf-8")
        (self.bin / "smpquery").chmod(0o755)
        self.images = tmp / "images"
        self.images.mkdir()
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def __call__(self, host: str, argv: tuple[str, ...]) -> Ran:
        self.calls.append((host, argv))
        if argv[0] == "ibnetdiscover":
            return Ran(0, self.discovery)
        cmd = [sys.executable, str(self.bin / "flint"), *argv[1:]] if argv[0] == "flint" else list(argv)
        env = {"PATH": f"{self.bin}:/usr/bin:/bin"}
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False, env=env)
        return Ran(p.returncode, p.stdout, p.stderr)

    def stage(self, version: str, psids: list[str] | None = None, device_type: str = "Quantum") -> str:
        path = self.images / f"fw-QM8790-rel-{version.replace('.', '_')}.bin"
        path.write_text(lab_image(device_type, version, psids or []))
        return str(path)

    def fw(self, switch: str) -> tuple[str, str]:
        s = json.loads(self.state.read_text())[switch]
        return s["fw"], s["fw_running"]


@pytest.fixture
def fab(tmp_path: Path) -> Fabric:
    return Fabric(tmp_path)


def _device(fab: Fabric, switch: str) -> str:
    device, why = locate("sm01", switch, fab.index, {}, fab)
    assert device is not None, why
    return device


def test_the_stand_in_answers_the_real_parser_with_the_switch_at_the_lid(fab: Fabric) -> None:
    device = _device(fab, "spine02")
    lid = {sw.name: sw.lid for sw in ibnetdiscover.parse(fab.discovery).switches}["spine02"]
    assert device == f"lid-{lid}"
    q = parse_flint(fab("sm01", ("flint", "-d", device, "q")).out)
    assert (q.fw_version, q.fw_running, q.psid) == (OLD, OLD, fw.DEFAULT_PSID)
    ran = fab("sm01", ("flint", "-d", "lid-999", "q"))  # nothing answers there
    assert ran.rc == 1 and "no device answers at LID 999" in ran.err


def test_a_switch_is_flashed_then_reset_and_proven_to_run_it(fab: Fabric) -> None:
    image = fab.stage(NEW)
    device = _device(fab, "spine01")
    report = flash_switch("sm01", device, SwitchJob("spine01", NEW, image), fab)
    assert report.ok, report.lines
    assert fab.fw("spine01") == (NEW, OLD) and f"flashed {OLD} -> {NEW}" in report.lines[-1]
    assert ("sm01", ("flint", "-d", device, "-i", image, "-y", "burn")) in fab.calls
    assert fab.fw("spine02") == (OLD, OLD)  # only the switch at that LID
    slept: list[float] = []
    report = reset_switch("sm01", device, "spine01", fab, lambda: device, 60, sleep=slept.append)
    assert report.ok, report.lines
    assert fab.fw("spine01") == (NEW, NEW) and report.lines[-1] == f"spine01: runs {NEW} (swreset)"
    again = flash_switch("sm01", device, SwitchJob("spine01", NEW, image), fab)  # at the version: skipped
    assert again.ok and "already at" in again.lines[-1]
    assert reset_switch("sm01", device, "spine01", fab, lambda: device, 60).lines[-1].endswith("nothing to activate")


def test_refused_a_psid_mismatch_a_downgrade_an_unstaged_or_foreign_image(fab: Fabric) -> None:
    device = _device(fab, "spine01")
    burns = lambda: [a for _, a in fab.calls if a[-1] == "burn"]  # noqa: E731
    report = flash_switch("sm01", device, SwitchJob("spine01", NEW, fab.stage(NEW), psids=("MT_0000000063",)), fab)
    assert not report.ok and "never cross-flashed" in report.lines[-1] and burns() == []
    report = flash_switch("sm01", device, SwitchJob("spine01", "27.2008.1000", fab.stage("27.2008.1000")), fab)
    assert not report.ok and "is a downgrade: refused without --allow-downgrade" in report.lines[-1]
    report = flash_switch("sm01", device, SwitchJob("spine01", NEW, str(fab.images / "missing.bin")), fab)
    assert not report.ok and "the image is not staged on sm01" in report.lines[-1] and burns() == []
    report = flash_switch("sm01", device, SwitchJob("spine01", NEW, fab.stage(NEW, device_type="ConnectX6")), fab)
    assert not report.ok and "flint burn failed: -E- PSID mismatch" in report.lines[-1]
    assert fab.fw("spine01") == (OLD, OLD)


def test_cli_flash_and_activate_a_switch(fab: Fabric, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_firmware, "make_runner", lambda env, checked: fab)
    _pin(fab.env, NEW)
    fab.stage(NEW)
    base = ["--switch", "leaf-su01-r0"]
    result = CliRunner().invoke(app, ["firmware", "flash", str(fab.env), *base, "--model", "QM8790", "--version",
                                      NEW, "--image-dir", str(fab.images)])
    assert result.exit_code == 0, result.output
    assert fab.fw("leaf-su01-r0") == (NEW, OLD) and "1 host(s) flashed or at the version, 0 failed" in result.output
    result = CliRunner().invoke(app, ["firmware", "activate", str(fab.env), *base, "--how", "swreset"])
    assert result.exit_code == 0, result.output
    assert fab.fw("leaf-su01-r0") == (NEW, NEW)


@pytest.mark.parametrize(("args", "message"), [
    (["flash", "--switch", "leaf-su01-r1", "--model", "QM8700", "--version", OLD],
     "--model QM8700: not pinned in"),
    (["flash", "--switch", "spine09", "--model", "QM8790", "--version", OLD], "--switch spine09: not a switch of"),
    (["flash", "--switch", "spine01", "--limit", "gpu01", "--model", "QM8790", "--version", OLD],
     "--switch and --limit"),
    (["flash", "--switch", "spine01", "--model", "QM8790", "--version", NEW], f"pins {OLD}"),
    (["activate", "--switch", "spine01", "--how", "mlxfwreset"], "--how swreset is a switch's"),
    (["activate", "--limit", "gpu01", "--how", "swreset"], "--how swreset is a switch's"),
])
def test_cli_refuses_what_the_inventory_does_not_say(fab: Fabric, monkeypatch: pytest.MonkeyPatch, args: list[str],
                                                     message: str) -> None:
    monkeypatch.setattr(cli_firmware, "make_runner", lambda env, checked: pytest.fail("connected"))
    result = CliRunner().invoke(app, ["firmware", args[0], str(fab.env), *args[1:]])
    assert result.exit_code == 2 and message in result.output, result.output


def test_a_managed_switch_is_refused_and_a_dry_run_connects_to_nothing(fab: Fabric,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_firmware, "make_runner", lambda env, checked: pytest.fail("connected"))
    fwyaml = yaml.safe_load((fab.env / "firmware.yaml").read_text())
    fwyaml["firmware"]["switches"].append({"model": "QM8700", "version": OLD, "image": "firmware/x.bin"})
    (fab.env / "firmware.yaml").write_text(yaml.safe_dump(fwyaml))
    result = CliRunner().invoke(app, ["firmware", "flash", str(fab.env), "--switch", "leaf-su01-r1", "--model",
                                      "QM8700", "--version", OLD])
    assert result.exit_code == 2 and "is updated from its own switch OS" in result.output, result.output
    result = CliRunner().invoke(app, ["firmware", "flash", str(fab.env), "--switch", "spine01", "--model", "QM8790",
                                      "--version", OLD, "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "sm01: would run ibnetdiscover (the LID of spine01); flint -d lid-<LID> q" in result.output
