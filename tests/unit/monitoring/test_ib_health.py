"""`ib-health`: the sminfo and mlxcables parsers on real captures (ParseError with line numbers on anything
else), and the rendered standalone script: the parsers embedded verbatim, its Prometheus text accepted by
the real `promtool check metrics`, --textfile written atomically. The script against the real sminfo on a
simulated fabric is tests/lab/test_ib_health_lab.py."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from clusterforge.parse import mlxcables, sminfo
from clusterforge.parse.errors import ParseError
from clusterforge.render import ib_health
from clusterforge.render.core import banner
from clusterforge.render.env import environment

FIX = Path("tests/fixtures")
SMINFO = (FIX / "sminfo/lab-ibsim-opensm-master.txt").read_text()
MLXCABLES = (FIX / "mlxcables/ustclug-hdr-dac-mcp1650.txt").read_text()


def test_sminfo_master() -> None:
    sm = sminfo.parse(SMINFO)
    assert (sm.lid, sm.guid, sm.activity_count, sm.priority, sm.state, sm.state_name, sm.master) == (
        4, "0x0c42a1030000100b", 220, 0, 3, "SMINFO_MASTER", True)


@pytest.mark.parametrize(("text", "line", "says"), [
    ("", 1, "empty input"),
    ("\n" + SMINFO.replace("state 3", "state three"), 2, "not an sminfo line"),
    (SMINFO + SMINFO, 2, "a second sminfo line"),
    ("sminfo: iberror: failed: query\n", 1, "not an sminfo line"),
])
def test_sminfo_refuses(text: str, line: int, says: str) -> None:
    with pytest.raises(ParseError) as exc:
        sminfo.parse(text)
    assert exc.value.line_no == line and says in str(exc.value) and exc.value.tool == "sminfo"


def test_mlxcables_dac() -> None:
    (c,) = mlxcables.parse(MLXCABLES)
    assert (c.number, c.name, c.temperature_c) == (1, "mt4123_pciconf0_cable_0", None)
    assert c.field("Part number") == "MCP1650-H002E26" and c.field("Length [m]") == "2 m"
    assert c.field("Attenuation") is not None and "25.78GHz: 0dB" in str(c.field("Attenuation"))
    assert c.field("Digital Diagnostic Monitoring") == "NO"


@pytest.mark.parametrize(("text", "line", "says"), [
    ("", 1, "no `Cable #N:` block"),
    ("Identifier : QSFP28\n", 1, "text before the first `Cable #N:`"),
    (MLXCABLES.replace("Temperature [c]                : N/A", "Temperature [c]                : hot"), 21,
     "neither N/A nor a number"),
    (MLXCABLES.replace("Revision                       : A4", "Revision A4"), 20, "not a `key : value` line"),
    (MLXCABLES.replace("Cable name    : mt4123_pciconf0_cable_0\n", ""), 3, "without `Cable name`"),
])
def test_mlxcables_refuses(text: str, line: int, says: str) -> None:
    with pytest.raises(ParseError) as exc:
        mlxcables.parse(text)
    assert exc.value.line_no == line and says in str(exc.value)


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = ib_health.file_spec()
    text = environment().get_template(spec.template).render({**spec.context, "banner": banner("lab")})
    path = tmp_path_factory.mktemp("ibh") / "ib-health"
    path.write_text(text)
    path.chmod(0o755)
    return path


def _module(path: Path) -> ModuleType:
    loader_spec = importlib.util.spec_from_loader("ib_health_script", loader=None)
    assert loader_spec is not None
    mod = importlib.util.module_from_spec(loader_spec)
    exec(compile(path.read_text(), str(path), "exec"), mod.__dict__)
    return mod


def _promtool(text: str) -> None:
    p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr


def test_script_embeds_the_parsers_verbatim(script: Path) -> None:
    text = script.read_text()
    assert text.startswith("#!/usr/bin/python3\n# Managed by clusterforge")
    for mod in (sminfo, mlxcables):
        assert repr(Path(str(mod.__file__)).read_text())[1:-1][:400] in text


def test_script_exposition(script: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mod = _module(script)
    master = mod.exposition((0, SMINFO, ""), (0, MLXCABLES, ""))
    assert 'cf_ib_sm_master{sm_lid="4",sm_guid="0x0c42a1030000100b",sm_priority="0"} 1\n' in master
    assert "cf_optic_temperature_celsius{" not in master  # a DAC: N/A, no series
    _promtool(master)
    none = mod.exposition((255, "", "sminfo: iberror: failed: query\n"), None)
    assert "\ncf_ib_sm_master 0\n" in none
    _promtool(none)
    optic = MLXCABLES.replace("Temperature [c]                : N/A", "Temperature [c]                : 47")
    hot = mod.exposition(None, (0, optic, ""))
    assert 'cf_optic_temperature_celsius{cable_name="mt4123_pciconf0_cable_0"} 47\n' in hot
    _promtool(hot)
    bad = mod.exposition((0, "garbage\n", ""), (0, "nonsense\n", ""))
    assert 'cf_ib_health_error{source="sminfo"} 1' in bad and 'cf_ib_health_error{source="mlxcables"} 1' in bad
    _promtool(bad)
    assert "ib-health: sminfo: line 1: not an sminfo line" in capsys.readouterr().err


def test_script_runs_standalone(script: Path, tmp_path: Path) -> None:
    # no clusterforge importable, no IB tools on PATH: it still runs and prints (nothing to report)
    env = {"PATH": "/nonexistent", "PYTHONPATH": "", "HOME": str(tmp_path)}
    p = subprocess.run([sys.executable, "-I", str(script), "--textfile", str(tmp_path)], capture_output=True,
                       text=True, timeout=30, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "clusterforge-ib-health.prom").read_text() == "\n"
    assert oct(os.stat(tmp_path / "clusterforge-ib-health.prom").st_mode & 0o777) == "0o644"
    assert [f.name for f in tmp_path.iterdir()] == ["clusterforge-ib-health.prom"]  # no temp file left
