"""A local dnf repository of LAB-ONLY stand-in RPMs with EL9's package names and the pinned versions.

The RPM twin of standin.py: NVIDIA's, DOCA's and Lustre's EL9 packages cannot be downloaded here, so each pin
gets an empty look-alike built by the real `rpmbuild` (noarch, no dependencies, a README saying what it is,
and the same few files the Debian stand-ins carry: units, `ofed_info`, mount.lustre), served as a repository
made by the real `createrepo_c`. The driver's packages are in a module stream (`nvidia-driver:<branch>-open`,
its modulemd added with `modifyrepo_c`), as in NVIDIA's CUDA repository for RHEL 9, so dnf's modular
filtering really hides them until the deploy runs `dnf module enable`.

    build_rpm_repo(out_dir, pins, kernels=["6.1.0-18-amd64"], streams={"nvidia-driver:550-open": {...}})

EPEL's node_exporter (`golang-github-prometheus-node-exporter`, what the monitoring component installs on EL9) is
no stand-in of nothing: given Debian's real prometheus-node-exporter .deb, its real binary is repackaged under
EPEL's name and unit (`node_exporter_rpm`), labelled LAB-ONLY, reading the lab's stand-in sysfs tree.

Needs `rpmbuild` (Debian's rpm), `createrepo_c` and `modifyrepo_c` (createrepo-c), `dpkg-deb` for the binary.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..deploy.packages import Pin, headers_package
from ..lab.monitoring_standins import SYSFS_ROOT
from .standin import LABEL, extra_files

TOOL_TIMEOUT_S = 300
#: Bump when what the RPM stand-ins ship changes (the lab's repository is rebuilt then).
RPM_RECIPE = 2
NODE_EXPORTER_RPM = "golang-github-prometheus-node-exporter"
"""EPEL 9's package of node_exporter (catalog/os.yaml, el9's node_exporter)."""
NODE_EXPORTER_REAL = "/usr/libexec/clusterforge-lab/node_exporter"
KERNEL_DEVEL_VERSION = "1.0-cfstandin1"


def split_version(version: str) -> tuple[str, str]:
    """A pin's deb-form version as RPM's VERSION and RELEASE: `550.90.07-1` -> (`550.90.07`, `1`);
    `2.21.5-1+cuda12.4` -> (`2.21.5`, `1+cuda12.4`); no revision: release 1."""
    upstream, _, release = version.partition("-")
    return upstream, release or "1"


def _rpm_path(rel: str) -> str:
    """Where a stand-in file goes in an RPM: units under /usr/lib (EL's merged /usr; a Debian root's /lib is a
    link to it), the rest as the Debian stand-in has it."""
    return "/usr/" + rel if rel.startswith("lib/") else "/" + rel


def spec_text(name: str, version: str) -> str:
    """The spec of one stand-in (every file it installs written by %install from here-documents)."""
    upstream, release = split_version(version)
    files = {_rpm_path(rel): item for rel, item in extra_files(name, version).items()}
    doc = f"/usr/share/doc/{name}/CLUSTERFORGE-LAB-STAND-IN"
    files[doc] = (f"{name} {version} is a {LABEL} package: it installs no real software.\n", 0o644)
    install = []
    for i, (path, (content, mode)) in enumerate(sorted(files.items())):
        marker = f"CF_STANDIN_EOF_{i}"
        if marker in content:
            raise ValueError(f"{name}: a stand-in file contains its own here-document marker")
        install += [f"mkdir -p %{{buildroot}}{path.rsplit('/', 1)[0]}",
                    f"cat > %{{buildroot}}{path} <<'{marker}'", content.rstrip("\n"), marker,
                    f"chmod {mode:o} %{{buildroot}}{path}"]
    listed = "\n".join(sorted(files))
    body = "\n".join(install).replace("%", "%%").replace("%%{buildroot}", "%{buildroot}")
    return (f"Name: {name}\nVersion: {upstream}\nRelease: {release}\nSummary: {LABEL} for {name} {version}\n"
            f"License: none\nBuildArch: noarch\nAutoReqProv: no\n\n%description\n{LABEL} for {name} {version}: "
            f"lab-only placeholder with the real name and version.\n\n%install\n{body}\n\n%files\n{listed}\n")


def node_exporter_spec(version: str, binary: Path, arch: str) -> str:
    """The spec of EPEL's node_exporter in the lab: Debian's real binary (`binary`, from its .deb) at
    NODE_EXPORTER_REAL, /usr/bin/node_exporter running it on the lab's stand-in sysfs tree, and a unit
    node_exporter.service shaped like EPEL's (its own environment file: the deploy's drop-in replaces it)."""
    upstream = version.split("-", 1)[0].split(":")[-1]
    wrapper = (f"#!/bin/sh\n# {LABEL} for EPEL's node_exporter: Debian's real node_exporter {version}, reading the "
               f"lab's stand-in sysfs tree\nexec {NODE_EXPORTER_REAL} \"$@\" --path.sysfs={SYSFS_ROOT}\n")
    unit = (f"# {LABEL}: shaped like EPEL's node_exporter.service\n[Unit]\nDescription=Prometheus exporter for "
            "machine metrics\nAfter=network-online.target\n\n[Service]\nEnvironmentFile=-/etc/default/node_exporter\n"
            "ExecStart=/usr/bin/node_exporter $OPTIONS\nRestart=on-failure\n\n[Install]\nWantedBy=multi-user.target\n")
    doc = f"{NODE_EXPORTER_RPM} is a {LABEL} package: Debian's node_exporter {version} under EPEL's name.\n"
    files = {"/usr/bin/node_exporter": (wrapper, 0o755), "/usr/lib/systemd/system/node_exporter.service": (unit, 0o644),
             f"/usr/share/doc/{NODE_EXPORTER_RPM}/CLUSTERFORGE-LAB-STAND-IN": (doc, 0o644)}
    install = [f"mkdir -p %{{buildroot}}{NODE_EXPORTER_REAL.rsplit('/', 1)[0]}",
               f"install -m 0755 {binary} %{{buildroot}}{NODE_EXPORTER_REAL}"]
    for i, (path, (content, mode)) in enumerate(sorted(files.items())):
        marker = f"CF_STANDIN_EOF_{i}"
        install += [f"mkdir -p %{{buildroot}}{path.rsplit('/', 1)[0]}", f"cat > %{{buildroot}}{path} <<'{marker}'",
                    content.rstrip("\n"), marker, f"chmod {mode:o} %{{buildroot}}{path}"]
    body = "\n".join(install).replace("%", "%%").replace("%%{buildroot}", "%{buildroot}")
    listed = "\n".join(sorted([*files, NODE_EXPORTER_REAL]))
    return (f"Name: {NODE_EXPORTER_RPM}\nVersion: {upstream}\nRelease: 1.cfstandin\nSummary: {LABEL} for "
            f"node_exporter\nLicense: Apache-2.0\nBuildArch: {arch}\nAutoReqProv: no\n%global debug_package %{{nil}}\n"
            f"%global __os_install_post %{{nil}}\n\n%description\n{LABEL}: Debian's real node_exporter {version} under "
            f"EPEL's package name.\n\n%install\n{body}\n\n%files\n{listed}\n")


def node_exporter_binary(deb: Path, work: Path) -> tuple[str, Path]:
    """(version, the binary) of Debian's prometheus-node-exporter .deb, unpacked under `work`."""
    version = subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], check=True, capture_output=True, text=True,
                             timeout=TOOL_TIMEOUT_S).stdout.strip()
    root = work / "node-exporter-deb"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True, capture_output=True, timeout=TOOL_TIMEOUT_S)
    binary = root / "usr" / "bin" / "prometheus-node-exporter"
    if not binary.is_file():
        raise FileNotFoundError(f"{deb.name} has no usr/bin/prometheus-node-exporter")
    return version, binary


def modulemd(stream: str, nevras: Sequence[str], profiles: Mapping[str, Sequence[str]]) -> str:
    """One module stream's document (modulemd v2), its packages as artifacts, for EL9's platform."""
    name, _, stream_name = stream.partition(":")
    lines = ["---", "document: modulemd", "version: 2", "data:", f"  name: {name}", f"  stream: \"{stream_name}\"",
             "  version: 1", "  context: cfstandin", "  arch: noarch",
             f"  summary: {LABEL} module stream", f"  description: {LABEL} module stream {stream}",
             "  license:", "    module: [none]", "  dependencies:", "    - buildrequires:",
             "        platform: [el9]", "      requires:", "        platform: [el9]", "  profiles:"]
    for profile, rpms in profiles.items():
        lines += [f"    {profile}:", f"      rpms: [{', '.join(rpms)}]"]
    lines += ["  artifacts:", "    rpms:", *(f"      - {n}" for n in nevras), "..."]
    return "\n".join(lines) + "\n"


def build_rpm_repo(out: Path, pins: Iterable[Pin], *, kernels: Sequence[str] = (),
                   streams: Mapping[str, Iterable[str]] = {}, node_exporter_deb: Path | None = None) -> Path:
    """Build (or rebuild) the repository under `out`; return `out`. `streams`: module stream -> the names of the
    packages in it (the rest are plain packages); `node_exporter_deb`: Debian's prometheus-node-exporter .deb, whose
    binary becomes EPEL's package here. Serve it with any HTTP server."""
    if out.exists():
        shutil.rmtree(out)
    (out / "packages").mkdir(parents=True)
    work = out.parent / f".{out.name}-build"
    shutil.rmtree(work, ignore_errors=True)
    (work / "specs").mkdir(parents=True)
    wanted = {(p.package, p.version) for p in pins}
    wanted |= {(headers_package(k, "el9"), KERNEL_DEVEL_VERSION) for k in kernels}
    specs = []
    for name, version in sorted(wanted):
        spec = work / "specs" / f"{name}-{version}.spec"
        spec.write_text(spec_text(name, version))
        specs.append(str(spec))
    if node_exporter_deb is not None:
        version, binary = node_exporter_binary(node_exporter_deb, work)
        spec = work / "specs" / f"{NODE_EXPORTER_RPM}.spec"
        spec.write_text(node_exporter_spec(version, binary, platform.machine()))
        specs.append(str(spec))
    try:
        subprocess.run(["rpmbuild", "-bb", "--quiet", "--define", f"_topdir {work / 'top'}",
                        "--define", f"_rpmdir {out / 'packages'}", "--define", "_build_id_links none",
                        "--define", "source_date_epoch_from_changelog 0", *specs],
                       check=True, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S,
                       env={"PATH": "/usr/bin:/bin", "SOURCE_DATE_EPOCH": "1700000000", "HOME": str(work)})
        subprocess.run(["createrepo_c", "--quiet", str(out)], check=True, capture_output=True,
                       timeout=TOOL_TIMEOUT_S)
        documents = []
        for stream, names in sorted(streams.items()):
            members = sorted(set(names))
            nevras = [f"{n}-0:{'-'.join(split_version(v))}.noarch" for n, v in sorted(wanted) if n in members]
            # NVIDIA's streams: the driver in `default`, Fabric Manager in `fm` (`dnf module install
            # nvidia-driver:<stream>/fm`)
            fm = [n for n in members if "fabric" in n]
            profiles = {"default": [n for n in members if n not in fm] or members, "fm": fm or members}
            documents.append(modulemd(stream, nevras, profiles))
        if documents:
            (work / "modules.yaml").write_text("".join(documents))
            subprocess.run(["modifyrepo_c", "--mdtype=modules", str(work / "modules.yaml"),
                            str(out / "repodata")], check=True, capture_output=True, timeout=TOOL_TIMEOUT_S)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out
