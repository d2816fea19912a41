"""The LAB-ONLY lnet.service stand-in's reader (rehearsal/standin_lnet.py): it reads /etc/lnet.conf as `lnetctl
import` would, so the lab's lnet.service succeeds only with a file in that layout. Checked against PyYAML on
real lnetctl output (tests/fixtures/lnetctl-net-show) and on every rendered lnet.conf, and run as the script
the stand-in package ships."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterforge.api import load_checked
from clusterforge.deploy.component import HostPlan
from clusterforge.deploy.options import DeployOptions
from clusterforge.rehearsal import standin_lnet
from clusterforge.rehearsal.standin import build_package
from clusterforge.rehearsal.standin_lnet import LnetConfError, nets, package_files, read

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "lnetctl-net-show"
REAL = ["whamcloud-o2ib-2ni-verbose", "whamcloud-tcp-mlxen0-2ni-fixture", "whamcloud-tcp-verbose-tcpbonding"]


def _plain(node: Any) -> Any:
    value = node[1]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _as_text(value: Any) -> Any:
    """PyYAML's document with every scalar as text (the reader keeps scalars as written)."""
    if isinstance(value, dict):
        return {str(k): _as_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_text(v) for v in value]
    return "" if value is None else str(value)


@pytest.mark.parametrize("name", REAL)
def test_real_lnetctl_output_reads_as_pyyaml_reads_it(name: str) -> None:
    text = (FIXTURES / f"{name}.txt").read_text()
    assert _plain((0, read(text))) == _as_text(yaml.safe_load(text))


def test_nets_of_real_output() -> None:
    assert nets((FIXTURES / "whamcloud-o2ib-2ni-verbose.txt").read_text()) == [("lo", []), ("o2ib", ["ib0", "ib1"])]
    assert nets((FIXTURES / "whamcloud-tcp-verbose-tcpbonding.txt").read_text()) == [("lo", []), ("tcp", ["eth1"])]


@pytest.mark.parametrize("env", ["lab", "prod"])
def test_every_rendered_lnet_conf_reads(env: str) -> None:
    from clusterforge.deploy.desired import host_plans

    checked = load_checked(ROOT / "inventories" / env)
    plans: dict[str, HostPlan] = host_plans(checked.index, DeployOptions(env))
    confs = {n: f.content for n, p in plans.items() for f in p.files if f.dest == "/etc/lnet.conf"}
    assert confs
    for node, text in confs.items():
        assert _plain((0, read(text))) == _as_text(yaml.safe_load(text)), node
        assert nets(text) == [("o2ib0", ["ib0"])], node


@pytest.mark.parametrize(("text", "line", "what"), [
    ("", 0, "empty"),
    ("# only a comment\n", 0, "empty"),
    ("route:\n  - net: tcp\n", 0, "no `net:` section"),
    ("net:\n", 1, "must be a list of nets"),
    ("net:\n    - net type: ib0\n", 2, "is not o2ibN"),
    ("net:\n    - net type: o2ib0\n", 2, "has no `local NI(s)` list"),
    ("net:\n    - net type: o2ib0\n      local NI(s):\n        - nid: 1.2.3.4@o2ib\n", 4, "without `interfaces`"),
    ("net:\n    - net type: o2ib0\n      local NI(s):\n        - interfaces:\n              0: ib 0\n", 5,
     "is not `<index>: <name>`"),
    ("net:\n    - net type: o2ib0\n      local NI(s):\n        - interfaces:\n              0: ib0\n     x: 1\n", 6,
     "unexpected indentation"),
    ("net:\n\t- net type: o2ib0\n", 2, "a tab"),
    ("net: [o2ib0]\n", 1, "only block mappings"),
    ("net:\n    - net type: o2ib0\n      net type: tcp0\n", 3, "duplicate key"),
    ("net:\n    - net type: 'o2ib0\n", 2, "unterminated"),
    ("- net type: o2ib0\n", 1, "the document is a list"),
])
def test_bad_files_name_the_line(text: str, line: int, what: str) -> None:
    with pytest.raises(LnetConfError) as err:
        nets(text)
    assert err.value.line == line and what in str(err.value)


def test_the_shipped_script_checks_and_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = package_files()
    unit = files["lib/systemd/system/lnet.service"][0]
    assert "LAB-ONLY" in unit and "ExecStart=/usr/sbin/lnet-lab-standin start /etc/lnet.conf" in unit
    script, mode = files["usr/sbin/lnet-lab-standin"]
    assert mode == 0o755 and script.startswith("#!/usr/bin/python3\n")
    exe = tmp_path / "lnet-lab-standin"
    exe.write_text(script.replace(f'RECORD_DIR = "{standin_lnet.RECORD_DIR}"', f'RECORD_DIR = "{tmp_path}/run"'))
    good = tmp_path / "lnet.conf"
    good.write_text((FIXTURES / "whamcloud-o2ib-2ni-verbose.txt").read_text())
    ok = subprocess.run([sys.executable, str(exe), "start", str(good)], capture_output=True, text=True, timeout=30)
    assert ok.returncode == 0, ok.stderr
    assert "LAB-ONLY" in ok.stdout and "o2ib(ib0,ib1)" in ok.stdout
    assert (tmp_path / "run" / "nets").read_text() == "lo()\no2ib(ib0,ib1)\n"
    bad = tmp_path / "bad.conf"
    bad.write_text("net:\n    - net type: ib0\n")
    no = subprocess.run([sys.executable, str(exe), "start", str(bad)], capture_output=True, text=True, timeout=30)
    assert no.returncode == 1 and f"{bad} line 2: net type 'ib0'" in no.stderr and "Traceback" not in no.stderr
    missing = subprocess.run([sys.executable, str(exe), "start", str(tmp_path / "absent")], capture_output=True,
                             text=True, timeout=30)
    assert missing.returncode == 1 and "cannot read" in missing.stderr
    stop = subprocess.run([sys.executable, str(exe), "stop"], capture_output=True, text=True, timeout=30)
    assert stop.returncode == 0 and not (tmp_path / "run" / "nets").exists()


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb (dpkg)")
def test_the_lustre_client_utils_standin_ships_the_unit_and_the_script(tmp_path: Path) -> None:
    deb = build_package(tmp_path, "lustre-client-utils", "2.15.5-1", "test")
    listing = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, timeout=30,
                             check=True).stdout
    assert "./lib/systemd/system/lnet.service" in listing and "./usr/sbin/lnet-lab-standin" in listing
    assert "-rwxr-xr-x root/root" in next(ln for ln in listing.splitlines() if ln.endswith("lnet-lab-standin"))
    assert "./usr/sbin/mount.lustre" in listing
