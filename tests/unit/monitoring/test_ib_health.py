"""`ib-health`: the sminfo and mlxcables parsers on real captures (ParseError with line numbers on anything
else), and the rendered standalone script: the parsers embedded verbatim, its Prometheus text accepted by
the real `promtool check metrics`, --textfile written atomically, the Lustre client's imports from a fake
`lctl` on PATH (the lustre_state parser's own tests are tests/unit/parse/test_parse_lustre_state.py), the
optic BER from a fake `mstlink` on PATH over a fake /sys/class/infiniband (parser: test_parse_mstlink.py). The
script against the real sminfo on a simulated fabric is tests/lab/test_ib_health_lab.py."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from clusterforge.parse import lustre_state, mlxcables, mstlink, sminfo
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
    for mod in (sminfo, mlxcables, lustre_state, mstlink):
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


# CONSTRUCTED, not a capture of a real client (none exists here): written from the format strings of
# lprocfs_state_seq_show in lustre/obdclass/lprocfs_status.c and lctl's `<param>=` line. The file system is
# mounted twice (two devices per target); OST0001 was evicted on the first mount at 1764594000 and on the
# second at 1764597600; OST0000 is IDLE on one mount and CONNECTING on the other.
LCTL_STATE = """\
mdc.lustre-MDT0000-mdc-ffff8a1c2e3f4000.state=
current_state: FULL
state_history:
 - [ 1764590400, CONNECTING ]
 - [ 1764590400, FULL ]
osc.lustre-OST0000-osc-ffff8a1c2e3f4000.state=
current_state: IDLE
state_history:
 - [ 1764590401, FULL ]
 - [ 1764590421, IDLE ]
osc.lustre-OST0001-osc-ffff8a1c2e3f4000.state=
current_state: FULL
state_history:
 - [ 1764594000, EVICTED ]
 - [ 1764594001, FULL ]
mdc.lustre-MDT0000-mdc-ffff8a1c2e3f8000.state=
current_state: FULL
state_history:
 - [ 1764590400, FULL ]
osc.lustre-OST0000-osc-ffff8a1c2e3f8000.state=
current_state: CONNECTING
state_history:
 - [ 1764590401, CONNECTING ]
osc.lustre-OST0001-osc-ffff8a1c2e3f8000.state=
current_state: FULL
state_history:
 - [ 1764597600, EVICTED ]
 - [ 1764597601, FULL ]
osc.scratch-OST0000-osc-ffff8a1c2e3fc000.state=
current_state: IDLE
state_history:
 - [ 1764590401, IDLE ]
"""


def test_script_lustre_imports(script: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mod = _module(script)
    text = mod.exposition(None, None, (0, LCTL_STATE, ""))
    lines = [ln for ln in text.splitlines() if ln.startswith("cf_lustre")]
    assert lines == [
        'cf_lustre_import_full{target="lustre-MDT0000",kind="mdc"} 1',
        'cf_lustre_import_full{target="lustre-OST0000",kind="osc"} 0',   # CONNECTING on one mount, IDLE on one
        'cf_lustre_import_full{target="lustre-OST0001",kind="osc"} 1',   # scratch-OST0000: IDLE, no sample
        'cf_lustre_import_last_evicted_seconds{target="lustre-OST0001",kind="osc"} 1764597600',
    ]
    _promtool(text)
    # no Lustre: lctl missing, or nothing mounted (no output, exit 2, its error on stderr): no series, no error
    for none in (None, (2, "", "error: get_param: param_path 'osc/*/state': No such file or directory\n")):
        assert mod.exposition(None, None, none) == "\n"
    # one pattern matched, the other not: what lctl printed is read
    assert 'cf_lustre_import_full{target="lustre-OST0001",kind="osc"} 1' in mod.exposition(
        None, None, (2, LCTL_STATE.split("mdc.lustre-MDT0000-mdc-ffff8a1c2e3f8000")[0], "error: ..."))
    bad = mod.exposition(None, None, (0, LCTL_STATE.replace("current_state: CONNECTING", "current_state: ?"), ""))
    assert bad == ('# HELP cf_ib_health_error 1 when a tool\'s output did not parse (ib-health\'s message on '
                   'stderr).\n# TYPE cf_ib_health_error gauge\ncf_ib_health_error{source="lctl"} 1\n')
    _promtool(bad)
    assert "ib-health: lctl: line 21: unknown import state '?'" in capsys.readouterr().err


def test_script_runs_lctl_without_a_shell(script: Path, tmp_path: Path) -> None:
    # a fake lctl (the only tool on PATH) records its argv and prints the constructed text
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "state.txt").write_text(LCTL_STATE)
    lctl = bin_dir / "lctl"
    lctl.write_text(f"#!{sys.executable}\nimport json, sys\n"
                    f"open({str(tmp_path / 'argv.json')!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
                    f"sys.stdout.write(open({str(bin_dir / 'state.txt')!r}).read())\n")
    lctl.chmod(0o755)
    out_dir = tmp_path / "textfile"
    out_dir.mkdir()
    env = {"PATH": str(bin_dir), "PYTHONPATH": "", "HOME": str(tmp_path)}
    p = subprocess.run([sys.executable, "-I", str(script), "--textfile", str(out_dir)], capture_output=True,
                       text=True, timeout=30, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "argv.json").read_text() == '["get_param", "osc.*.state", "mdc.*.state"]'
    prom = (out_dir / "clusterforge-ib-health.prom").read_text()
    assert 'cf_lustre_import_last_evicted_seconds{target="lustre-OST0001",kind="osc"} 1764597600\n' in prom
    _promtool(prom)


# CONSTRUCTED, not a capture (none exists here): `mstlink -c --json`'s document as the mstflint source builds
# it (the parser's test, tests/unit/parse/test_parse_mstlink.py, says which source strings); numbers made up.
MSTLINK_JSON = """\
{
   "result" : {
      "output" : {
         "Physical Counters and BER Info" : {
            "Effective Physical BER" : "15E-255",
            "Effective Physical Errors" : "0",
            "Raw Physical BER" : "%s",
            "Time Since Last Clear [Min]" : "120.0"
         }
      }
   },
   "status" : {
      "code" : 0,
      "message" : "success"
   }
}

"""
PORTS = [("mlx5_0", "1"), ("mlx5_1", "1"), ("mlx5_2", "1"), ("mlx5_3", "1")]


def test_script_optic_ber(script: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mod = _module(script)
    fatal = (1, "\x1b[31m \n\x1b[0m \n", "-E- Failed to open device: \"mlx5_2\", Permission denied\n")
    results = [(PORTS[0], (0, MSTLINK_JSON % "3E-9", "")), (PORTS[1], (0, MSTLINK_JSON % "N/A", "")),
               (PORTS[2], fatal), (PORTS[3], (0, MSTLINK_JSON % "12E-13", ""))]
    text = mod.exposition(None, None, None, results)
    assert [ln for ln in text.splitlines() if "fec_ber{" in ln] == [
        'cf_optic_prefec_ber{device="mlx5_0",port="1"} 3e-09',
        'cf_optic_prefec_ber{device="mlx5_3",port="1"} 1.2e-12',   # mlx5_1: link down (N/A), mlx5_2: no access
        'cf_optic_postfec_ber{device="mlx5_0",port="1"} 1.5e-254',
        'cf_optic_postfec_ber{device="mlx5_1",port="1"} 1.5e-254',
        'cf_optic_postfec_ber{device="mlx5_3",port="1"} 1.5e-254',
    ]
    assert "cf_ib_health_error" not in text
    _promtool(text)
    assert 'ib-health: mstlink mlx5_2 port 1: -E- Failed to open device: "mlx5_2", Permission denied' in (
        capsys.readouterr().err)
    assert mod.exposition(None, None, None, ()) == "\n"  # no mstlink: no series, no error
    bad = mod.exposition(None, None, None, [(PORTS[0], (0, MSTLINK_JSON % "3.0E-9", "")),
                                            (PORTS[1], (0, "garbage\n", "")),
                                            (PORTS[3], (0, MSTLINK_JSON % "1E-12", ""))])
    assert [ln for ln in bad.splitlines() if not ln.startswith("#")] == [
        'cf_optic_prefec_ber{device="mlx5_3",port="1"} 1e-12',
        'cf_optic_postfec_ber{device="mlx5_3",port="1"} 1.5e-254',
        'cf_ib_health_error{source="mstlink"} 1',  # once for the two ports that did not parse
    ]
    _promtool(bad)
    err = capsys.readouterr().err
    assert "ib-health: mstlink mlx5_0 port 1: line 7: Raw Physical BER: '3.0E-9' is neither" in err
    assert "ib-health: mstlink mlx5_1 port 1: line 1: not JSON" in err


def test_script_runs_mstlink_per_port_without_a_shell(script: Path, tmp_path: Path) -> None:
    # a fake /sys/class/infiniband (two HCAs, one with two ports) and a fake mstlink recording its argv
    sysfs = tmp_path / "infiniband"
    for dev, port in (("mlx5_1", "2"), ("mlx5_0", "1"), ("mlx5_1", "1")):
        (sysfs / dev / "ports" / port).mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "doc.json").write_text(MSTLINK_JSON % "2E-8")
    tool = bin_dir / "mstlink"
    tool.write_text(f"#!{sys.executable}\nimport sys\n"
                    f"open({str(tmp_path / 'argv.txt')!r}, 'a').write(repr(sys.argv[1:]) + '\\n')\n"
                    f"sys.stdout.write(open({str(bin_dir / 'doc.json')!r}).read())\n")
    tool.chmod(0o755)
    env = {"PATH": str(bin_dir), "PYTHONPATH": "", "HOME": str(tmp_path)}
    p = subprocess.run([sys.executable, "-I", str(script), "--ib-sysfs", str(sysfs)], capture_output=True,
                       text=True, timeout=30, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    ports = (("mlx5_0", "1"), ("mlx5_1", "1"), ("mlx5_1", "2"))
    assert (tmp_path / "argv.txt").read_text().splitlines() == [
        repr(["-d", dev, "-p", port, "-c", "--json"]) for dev, port in ports]
    assert 'cf_optic_prefec_ber{device="mlx5_1",port="2"} 2e-08\n' in p.stdout
    _promtool(p.stdout)
    # no such directory (a node without HCAs): mstlink is never run
    (tmp_path / "argv.txt").unlink()
    p = subprocess.run([sys.executable, "-I", str(script), "--ib-sysfs", str(tmp_path / "none")], capture_output=True,
                       text=True, timeout=30, env=env, cwd=tmp_path)
    assert p.returncode == 0 and p.stdout == "\n" and not (tmp_path / "argv.txt").exists()


def test_script_reads_mlxlink_where_mstflint_is_not_installed(script: Path, tmp_path: Path) -> None:
    """MFT's mlxlink text (real captures: a clean 4x link, the HDR grep fragment with a 1E-8 raw BER) feeds the
    same BER series; mstlink is preferred where both are installed; mlxlink's garbage is one error sample."""
    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "mlxlink"
    clean = next(fixtures.glob("bf3-mft4.30-m-c-*.txt"))
    fragment = next(fixtures.glob("cx6-hdr2x-mft4.24-show-counters-*.txt"))
    sysfs = tmp_path / "infiniband"
    for dev in ("mlx5_0", "mlx5_1", "mlx5_2"):
        (sysfs / dev / "ports" / "1").mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "mlxlink"
    answers = {"mlx5_0": str(clean), "mlx5_1": str(fragment)}
    tool.write_text(f"#!{sys.executable}\nimport sys\n"
                    f"open({str(tmp_path / 'argv.txt')!r}, 'a').write(repr(sys.argv[1:]) + '\\n')\n"
                    f"answers = {{k: open(v).read() for k, v in {answers!r}.items()}}\n"
                    "sys.stdout.write(answers.get(sys.argv[2], 'garbage\\n'))\n")
    tool.chmod(0o755)
    env = {"PATH": str(bin_dir), "PYTHONPATH": "", "HOME": str(tmp_path)}
    p = subprocess.run([sys.executable, "-I", str(script), "--ib-sysfs", str(sysfs)], capture_output=True,
                       text=True, timeout=30, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "argv.txt").read_text().splitlines()[0] == repr(["-d", "mlx5_0", "-p", "1", "-c"])
    assert 'cf_optic_prefec_ber{device="mlx5_0",port="1"} 1.5e-254' in p.stdout
    assert 'cf_optic_prefec_ber{device="mlx5_1",port="1"} 1e-08' in p.stdout
    assert 'cf_ib_health_error{source="mlxlink"} 1' in p.stdout and "ib-health: mlxlink mlx5_2 port 1:" in p.stderr
    _promtool(p.stdout)
    # both installed: mstlink (its JSON) is read, mlxlink never run
    (tmp_path / "argv.txt").unlink()
    (bin_dir / "doc.json").write_text(MSTLINK_JSON % "2E-8")
    (bin_dir / "mstlink").write_text(f"#!{sys.executable}\nimport sys\n"
                                     f"sys.stdout.write(open({str(bin_dir / 'doc.json')!r}).read())\n")
    (bin_dir / "mstlink").chmod(0o755)
    p = subprocess.run([sys.executable, "-I", str(script), "--ib-sysfs", str(sysfs)], capture_output=True,
                       text=True, timeout=30, env=env, cwd=tmp_path)
    assert p.returncode == 0 and not (tmp_path / "argv.txt").exists(), p.stderr
    assert 'cf_optic_prefec_ber{device="mlx5_2",port="1"} 2e-08' in p.stdout
