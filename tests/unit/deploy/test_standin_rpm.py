"""The lab's stand-in RPM repository, made by the real rpmbuild, createrepo_c and modifyrepo_c, read by the real
dnf (into a scratch root): the driver's packages hidden until their module stream is enabled, every pin
installable at its version, and rpm's and the versionlock plugin's own output read back by the deploy's probe
parser, with the deploy's rule for a pin."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from clusterforge.api import load_checked
from clusterforge.deploy.facts import parse_state
from clusterforge.deploy.packages import all_pins, module_streams, nvidia_pins
from clusterforge.deploy.pkgmgr import DNF_MANAGER, VERSIONLOCK_LIST
from clusterforge.rehearsal.standin import download_debs
from clusterforge.rehearsal.standin_rpm import (
    NODE_EXPORTER_REAL,
    NODE_EXPORTER_RPM,
    build_rpm_repo,
    spec_text,
    split_version,
)

ROOT = Path(__file__).resolve().parents[3]
TOOLS = ("rpmbuild", "createrepo_c", "modifyrepo_c", "dnf", "rpm")
needs_tools = pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS) or os.geteuid() != 0,
                                 reason="rpm, dnf, dnf-plugins-core and createrepo-c (scripts/lab-deps.sh), as root")


def test_versions_split_as_rpm_has_them() -> None:
    assert split_version("550.90.07-1") == ("550.90.07", "1")
    assert split_version("2.21.5-1+cuda12.4") == ("2.21.5", "1+cuda12.4")
    assert split_version("2.13.9") == ("2.13.9", "1")
    spec = spec_text("doca-ofed", "24.04-0.7.0.0")
    assert "Version: 24.04\nRelease: 0.7.0.0\n" in spec and "/usr/bin/ofed_info" in spec
    assert "AutoReqProv: no" in spec  # a stand-in requires nothing of the Debian root it lands on


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], list[str]]:
    sw = load_checked(ROOT / "inventories" / "lab").index.inv.software
    assert sw.nvidia_driver is not None
    pins = all_pins(sw, "el9")
    stream = module_streams("nvidia", family="el9", branch=sw.nvidia_driver.split(".")[0])
    driver = [p.package for p in nvidia_pins(sw, True, "el9")]
    out = build_rpm_repo(tmp_path_factory.mktemp("rpm") / "repo", pins, kernels=["6.1.0-18-amd64"],
                         streams={stream[0]: driver})
    return out, {p.package: p.version for p in pins}, [*stream]


def _dnf(root: Path, repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """dnf on a scratch root: the repository, EL9's platform (modular filtering) and its own lock list."""
    (root / "etc/yum.repos.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/yum.repos.d/lab.repo").write_text(f"[lab]\nname=lab\nbaseurl=file://{repo}\nenabled=1\ngpgcheck=0\n")
    conf = root / "plugin-conf"
    conf.mkdir(exist_ok=True)
    (conf / "versionlock.conf").write_text(f"[main]\nenabled=1\nlocklist={root / 'versionlock.list'}\n")
    (conf / "local.conf").write_text("[main]\nenabled=0\n")
    (root / "versionlock.list").touch()
    return subprocess.run(["dnf", "-q", "-y", f"--installroot={root}", "--releasever=9",
                           "--setopt=module_platform_id=platform:el9", f"--setopt=reposdir={root / 'etc/yum.repos.d'}",
                           f"--setopt=pluginconfpath={conf}", *args],
                          capture_output=True, text=True, timeout=300, check=False)


@needs_tools
def test_dnf_installs_the_pins_only_once_the_stream_is_enabled(tmp_path: Path,
                                                              repo: tuple[Path, dict[str, str], list[str]]) -> None:
    out, versions, streams = repo
    root = tmp_path / "root"
    spec = DNF_MANAGER.spec("nvidia-open", versions["nvidia-open"])
    hidden = _dnf(root, out, "install", spec)
    assert hidden.returncode != 0 and "Unable to find a match" in hidden.stdout + hidden.stderr
    assert _dnf(root, out, "module", "enable", *streams).returncode == 0
    specs = [DNF_MANAGER.spec(n, v) for n, v in sorted(versions.items())]
    done = _dnf(root, out, "install", *specs, "kernel-devel-6.1.0-18-amd64")
    assert done.returncode == 0, done.stderr
    locked = ["nvidia-open", "nvidia-fabric-manager", "libnccl"]
    assert _dnf(root, out, "versionlock", "add", *(DNF_MANAGER.spec(n, versions[n]) for n in locked)).returncode == 0
    # what the deploy's probe prints on such a host, read by its parser
    probe = DNF_MANAGER.probe(sorted(versions), "@@cf ").replace("rpm -q", f"rpm --root {root} -q").replace(
        VERSIONLOCK_LIST, str(root / "versionlock.list"))
    text = subprocess.run(["sh", "-c", probe], capture_output=True, text=True, timeout=60, check=True).stdout
    facts = parse_state(text.splitlines())
    assert set(facts.packages) == set(versions)
    for name, version in versions.items():
        assert DNF_MANAGER.matches(version, facts.package_version(name)), (name, version)
        assert facts.packages[name].held == (name in locked), name
    # the stand-ins' files are where the EL packages put theirs
    assert (root / "usr/bin/ofed_info").is_file()
    assert (root / "usr/lib/systemd/system/nvidia-persistenced.service").is_file()
    assert "LAB-ONLY" in (root / "usr/share/doc/nvidia-open/CLUSTERFORGE-LAB-STAND-IN").read_text()


def _node_exporter_deb(dest: Path) -> Path:
    """Debian's real prometheus-node-exporter .deb: apt's cache, else `apt-get download` as the lab does."""
    cached = sorted(Path("/var/cache/apt/archives").glob("prometheus-node-exporter_*.deb"))
    if cached:
        return cached[-1]
    debs = [d for d in download_debs(["prometheus-node-exporter"], dest) if d.name.startswith("prometheus-node-")]
    assert debs, "apt-get download prometheus-node-exporter gave nothing"
    return debs[0]


@needs_tools
def test_epels_node_exporter_is_debians_real_binary_under_its_name(tmp_path: Path) -> None:
    """The monitoring component installs EPEL's golang-github-prometheus-node-exporter on EL9: in the lab it is
    Debian's real node_exporter repackaged (LAB-ONLY), installed by the real dnf, with EPEL's unit name."""
    out = build_rpm_repo(tmp_path / "repo", [], node_exporter_deb=_node_exporter_deb(tmp_path / "debs"))
    root = tmp_path / "root"
    done = _dnf(root, out, "install", NODE_EXPORTER_RPM)
    assert done.returncode == 0, done.stderr
    real = root / NODE_EXPORTER_REAL.lstrip("/")
    version = subprocess.run([str(real), "--version"], capture_output=True, text=True, timeout=60, check=True)
    assert "node_exporter, version" in version.stdout + version.stderr
    wrapper = (root / "usr/bin/node_exporter").read_text()
    assert "LAB-ONLY" in wrapper and f"exec {NODE_EXPORTER_REAL} " in wrapper and "--path.sysfs=" in wrapper
    unit = (root / "usr/lib/systemd/system/node_exporter.service").read_text()
    assert "ExecStart=/usr/bin/node_exporter $OPTIONS" in unit  # EPEL's shape: the deploy's drop-in replaces it
    query = subprocess.run(["rpm", "--root", str(root), "-q", "--qf", "%{NAME} %{VERSION}", NODE_EXPORTER_RPM],
                           capture_output=True, text=True, timeout=60, check=True)
    assert query.stdout.startswith(f"{NODE_EXPORTER_RPM} ") and query.stdout.split()[1][0].isdigit()
