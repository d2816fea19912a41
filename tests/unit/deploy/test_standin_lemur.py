"""The lab's stand-ins of Lemur's two packages (rehearsal/standin.py): lemur-hsm-agent's lhsmd reads prod's
rendered agent configuration as the real agent does when it starts (client_device, enabled_plugins, each
plugin in lemur-data-movers' directory with its configuration beside the agent's), then idles; what the real
agent would refuse, it refuses, saying why."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clusterforge.api import load_checked
from clusterforge.deploy.packages import lemur_pins
from clusterforge.rehearsal.standin import LABEL, build_repo
from clusterforge.render.core import render_environment

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.skipif(not (shutil.which("dpkg-deb") and shutil.which("apt-ftparchive")
                                     and shutil.which("dpkg-scanpackages")),
                                reason="needs dpkg-dev and apt-utils")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both stand-in packages at prod's pin, unpacked into one root (what apt installs)."""
    tmp = tmp_path_factory.mktemp("lemur")
    checked = load_checked(ROOT / "inventories" / "prod")
    pins = lemur_pins(checked.index.inv.software)
    repo = build_repo(tmp / "repo", pins)
    root = tmp / "root"
    for pin in pins:
        (deb,) = repo.glob(f"pool/{pin.package}_{pin.version}_all.deb")
        info = subprocess.run(["dpkg-deb", "-f", str(deb), "Package", "Version", "Description"], check=True,
                              capture_output=True, text=True, timeout=30).stdout
        assert f"Package: {pin.package}\nVersion: {pin.version}\n" in info and LABEL in info
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True, capture_output=True, timeout=30)
    etc = tmp / "etc-lhsmd"
    etc.mkdir()
    files = render_environment(checked.index, "prod")
    for name in ("agent", "lhsm-plugin-s3"):
        (etc / name).write_text(files[f"hosts/sm01/etc/lhsmd/{name}"])
    return tmp


def _start(tmp: Path, config: Path) -> subprocess.Popen[str]:
    env = {"CF_LAB_LHSMD_PLUGIN_DIR": str(tmp / "root/usr/libexec/lhsmd"), "PATH": "/usr/bin:/bin"}
    return subprocess.Popen([sys.executable, str(tmp / "root/usr/sbin/lhsmd"), "-config", str(config)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_the_agent_reads_prods_configuration_and_idles(installed: Path) -> None:
    assert (installed / "root/usr/libexec/lhsmd/lhsm-plugin-s3").stat().st_mode & 0o111
    proc = _start(installed, installed / "etc-lhsmd/agent")
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("lhsmd (LAB-ONLY stand-in): ") and "@o2ib0:/lfs01 with lhsm-plugin-s3" in line
        assert proc.poll() is None  # it runs: a unit that starts it is active
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.parametrize(("edit", "why"), [
    (lambda d: (d / "lhsm-plugin-s3").unlink(), "plugin lhsm-plugin-s3 has no configuration in"),
    (lambda d: (d / "agent").write_text((d / "agent").read_text().replace("@o2ib0:/lfs01", "")),
     "client_device must be NID[:NID...]:/FSNAME"),
    (lambda d: (d / "agent").write_text((d / "agent").read_text().replace('"lhsm-plugin-s3"', '"lhsm-plugin-gcs"')),
     "plugin lhsm-plugin-gcs is not in"),
    (lambda d: (d / "agent").write_text("handler_count = 4\n"), "client_device must be"),
    (lambda d: (d / "agent").unlink(), "cannot read"),
])
def test_what_the_agent_would_refuse_fails_saying_why(installed: Path, tmp_path: Path, edit, why: str) -> None:  # type: ignore[no-untyped-def]
    conf = tmp_path / "lhsmd"
    shutil.copytree(installed / "etc-lhsmd", conf)
    edit(conf)
    proc = _start(installed, conf / "agent")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1 and err.startswith("lhsmd (lab stand-in): ") and why in err, err
