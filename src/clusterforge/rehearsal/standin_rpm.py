"""A local dnf repository of LAB-ONLY stand-in RPMs with EL9's package names and the pinned versions.

The RPM twin of standin.py: NVIDIA's, DOCA's and Lustre's EL9 packages cannot be downloaded here, so each pin
gets an empty look-alike built by the real `rpmbuild` (noarch, no dependencies, a README saying what it is,
and the same few files the Debian stand-ins carry: units, `ofed_info`, mount.lustre), served as a repository
made by the real `createrepo_c`. The driver's packages are in a module stream (`nvidia-driver:<branch>-open`,
its modulemd added with `modifyrepo_c`), as in NVIDIA's CUDA repository for RHEL 9, so dnf's modular
filtering really hides them until the deploy runs `dnf module enable`.

    build_rpm_repo(out_dir, pins, kernels=["6.1.0-18-amd64"], streams={"nvidia-driver:550-open": {...}})

Needs `rpmbuild` (Debian's rpm), `createrepo_c` and `modifyrepo_c` (createrepo-c).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..deploy.packages import Pin, headers_package
from .standin import LABEL, extra_files

TOOL_TIMEOUT_S = 300
#: Bump when what the RPM stand-ins ship changes (the lab's repository is rebuilt then).
RPM_RECIPE = 1
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
                   streams: Mapping[str, Iterable[str]] = {}) -> Path:
    """Build (or rebuild) the repository under `out`; return `out`. `streams`: module stream -> the names of the
    packages in it (the rest are plain packages). Serve it with any HTTP server."""
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
