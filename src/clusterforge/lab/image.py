"""The lab hosts' container image: Debian from debootstrap, imported into podman.

No registry is needed: the root file system is bootstrapped from the apt
mirror this machine already uses (read from /etc/apt/sources.list and
sources.list.d/*.list|*.sources, never hard-coded).  The image tag is a hash
of the package list, the suite and the recipe version, so an image is built
once and reused until one of those changes.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from clusterforge.lab.errors import LabError
from clusterforge.lab.hosts.podman import exists, podman
from clusterforge.lab.proc import run

#: What every lab host gets.  openssh-server/python3/sudo make it a deploy
#: target; infiniband-diags/libumad2sim0/opensm make it a fabric client.
DEFAULT_PACKAGES: tuple[str, ...] = (
    "openssh-server", "python3", "sudo", "infiniband-diags", "libumad2sim0", "opensm",
    "iproute2", "procps",
)
#: Added for a lab whose hosts boot systemd (``LabSpec.systemd``): units really enabled and started.
#: systemd-timesyncd is there for the deploy's try-restart; it does not run in a container (its own condition).
SYSTEMD_PACKAGES: tuple[str, ...] = ("systemd", "systemd-sysv", "dbus", "systemd-timesyncd")
#: Bump when ``_customize_systemd`` changes (only systemd images carry it in their tag).
SYSTEMD_RECIPE = 2
DEFAULT_SUITE = "bookworm"
IMAGE_REPO = "localhost/clusterforge-lab"
#: Bump when ``_customize`` changes what ends up in the image.
RECIPE_VERSION = 1

#: The OS shapes a lab host can take (a node's declared release). Only Debian's packages can be fetched here, so
#: every shape is a Debian root; an Ubuntu- or EL-shaped one is a LAB-ONLY container that says so in its
#: /etc/os-release (the deploy reads ID and VERSION_ID from it before any change, as on a real node) and, for
#: EL, carries the real rpm, dnf and the versionlock plugin (dnf-plugins-core), so the deploy's dnf commands run
#: for real against the lab's stand-in RPM repository, and restorecon (policycoreutils: SELinux itself is off in a
#: container, so it labels nothing there). "debian12" is the plain image.
SHAPE_PACKAGES: dict[str, tuple[str, ...]] = {
    "debian12": (),
    "ubuntu2204": (),
    "ubuntu2404": (),
    "rocky9": ("rpm", "dnf", "dnf-plugins-core", "policycoreutils"),
    "alma9": ("rpm", "dnf", "dnf-plugins-core", "policycoreutils"),
    "rhel9": ("rpm", "dnf", "dnf-plugins-core", "policycoreutils"),
}
_LAB_ONLY = "LAB-ONLY stand-in (clusterforge): a Debian 12 root"
SHAPE_OS_RELEASE: dict[str, str] = {
    "ubuntu2204": ('NAME="Ubuntu"\nVERSION="22.04 LTS (Jammy Jellyfish; LAB-ONLY shape)"\nID=ubuntu\nID_LIKE=debian\n'
                   'VERSION_ID="22.04"\nVERSION_CODENAME=jammy\n'
                   f'PRETTY_NAME="Ubuntu 22.04 shape: {_LAB_ONLY}, Ubuntu package names"\n'),
    "ubuntu2404": ('NAME="Ubuntu"\nVERSION="24.04 LTS (Noble Numbat; LAB-ONLY shape)"\nID=ubuntu\nID_LIKE=debian\n'
                   'VERSION_ID="24.04"\nVERSION_CODENAME=noble\n'
                   f'PRETTY_NAME="Ubuntu 24.04 shape: {_LAB_ONLY}, Ubuntu package names"\n'),
    # PLATFORM_ID is what dnf's modular filtering reads: a module stream's packages stay hidden until enabled
    "rocky9": ('NAME="Rocky Linux"\nVERSION="9.4 (LAB-ONLY shape)"\nID="rocky"\nID_LIKE="rhel centos fedora"\n'
               'VERSION_ID="9.4"\nPLATFORM_ID="platform:el9"\n'
               f'PRETTY_NAME="Rocky Linux 9 shape: {_LAB_ONLY} with the real rpm and dnf"\n'),
    "alma9": ('NAME="AlmaLinux"\nVERSION="9.4 (LAB-ONLY shape)"\nID="almalinux"\nID_LIKE="rhel centos fedora"\n'
              'VERSION_ID="9.4"\nPLATFORM_ID="platform:el9"\n'
              f'PRETTY_NAME="AlmaLinux 9 shape: {_LAB_ONLY} with the real rpm and dnf"\n'),
    "rhel9": ('NAME="Red Hat Enterprise Linux"\nVERSION="9.4 (LAB-ONLY shape)"\nID="rhel"\nID_LIKE="fedora"\n'
              'VERSION_ID="9.4"\nPLATFORM_ID="platform:el9"\n'
              f'PRETTY_NAME="Red Hat Enterprise Linux 9 shape: {_LAB_ONLY} with the real rpm and dnf"\n'),
}
LOCK_PATH = Path("/var/tmp/clusterforge-lab-image.lock")


@dataclass(frozen=True)
class AptSource:
    uri: str
    suites: tuple[str, ...]
    components: tuple[str, ...]


def read_apt_sources(root: Path = Path("/")) -> list[AptSource]:
    """deb sources apt would use: sources.list plus sources.list.d/*.list|*.sources."""
    etc = root / "etc/apt"
    out: list[AptSource] = []
    files = [etc / "sources.list"]
    d = etc / "sources.list.d"
    if d.is_dir():
        files += sorted(p for p in d.iterdir() if p.suffix in (".list", ".sources"))
    for f in files:
        if not f.is_file():
            continue
        text = f.read_text(errors="replace")
        out += _parse_deb822(text) if f.suffix == ".sources" else _parse_one_line(text)
    return out


def _parse_one_line(text: str) -> list[AptSource]:
    out = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line.startswith("deb "):
            continue
        parts = line.split()[1:]
        if parts and parts[0].startswith("["):
            while parts and not parts[0].endswith("]"):
                parts.pop(0)
            parts = parts[1:]
        if len(parts) >= 2:
            out.append(AptSource(parts[0], (parts[1],), tuple(parts[2:])))
    return out


def _parse_deb822(text: str) -> list[AptSource]:
    out = []
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        key = ""
        for raw in stanza.splitlines():
            if raw.startswith("#"):
                continue
            if raw[:1].isspace() and key:
                fields[key] += " " + raw.strip()
                continue
            if ":" in raw:
                key, value = raw.split(":", 1)
                key = key.strip().lower()
                fields[key] = value.strip()
        if "deb" not in fields.get("types", "").split():
            continue
        if fields.get("enabled", "yes").lower() == "no":
            continue
        for uri in fields.get("uris", "").split():
            out.append(
                AptSource(uri, tuple(fields.get("suites", "").split()),
                          tuple(fields.get("components", "").split()))
            )
    return out


def debian_mirror(suite: str = DEFAULT_SUITE, root: Path = Path("/")) -> str:
    """URI of the configured archive serving ``suite`` itself (not -updates/-security)."""
    for src in read_apt_sources(root):
        if suite in src.suites and (not src.components or "main" in src.components):
            return src.uri
    raise LabError(
        f"no apt source for suite {suite!r} with component main in {root / 'etc/apt'}; "
        "debootstrap needs the Debian archive this machine installs from"
    )


def image_tag(packages: Sequence[str] = DEFAULT_PACKAGES, suite: str = DEFAULT_SUITE, *,
              systemd: bool = False, shape: str = "debian12") -> str:
    extra = [f"systemd-recipe-{SYSTEMD_RECIPE}", *SYSTEMD_PACKAGES] if systemd else []
    if shape != "debian12":  # the plain image's tag is as it always was
        extra += [f"shape-{shape}", SHAPE_OS_RELEASE.get(shape, ""), *SHAPE_PACKAGES.get(shape, ())]
    key = "\n".join([suite, str(RECIPE_VERSION), *sorted(set(packages)), *extra])
    kind = ("-systemd" if systemd else "") + ("" if shape == "debian12" else f"-{shape}")
    return f"{IMAGE_REPO}:{suite}{kind}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def check_shape(shape: str) -> None:
    if shape not in SHAPE_PACKAGES:
        raise LabError(f"a lab host cannot take the shape {shape!r}: the lab has {', '.join(SHAPE_PACKAGES)}")


def image_exists(tag: str) -> bool:
    return exists("image", tag)


def build_image(
    packages: Sequence[str] = DEFAULT_PACKAGES,
    *,
    suite: str = DEFAULT_SUITE,
    mirror: str | None = None,
    workdir: Path | None = None,
    timeout: float = 1500.0,
    systemd: bool = False,
    shape: str = "debian12",
) -> str:
    """Return the image tag, building it first if it does not exist (cached). ``systemd``: systemd is
    PID 1 (the lab's sshd and OpenSM as units, see ``_customize_systemd``); ``shape``: the OS the host is shaped
    as (SHAPE_PACKAGES, ``_customize_shape``)."""
    check_shape(shape)
    tag = image_tag(packages, suite, systemd=systemd, shape=shape)
    if systemd:
        packages = (*packages, *SYSTEMD_PACKAGES)
    packages = (*packages, *SHAPE_PACKAGES[shape])
    LOCK_PATH.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK_PATH, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time on this machine
        if image_exists(tag):
            return tag
        mirror = mirror or debian_mirror(suite)
        tmp = Path(tempfile.mkdtemp(prefix="cf-lab-image-", dir=workdir or Path("/var/tmp")))
        try:
            rootfs = tmp / "rootfs"
            run(
                ["debootstrap", "--variant=minbase", "--include=" + ",".join(sorted(packages)),
                 suite, str(rootfs), mirror],
                timeout=timeout,
            )
            _customize(rootfs)
            customize_shape(rootfs, shape)
            if systemd:
                _customize_systemd(rootfs)
            tarball = tmp / "rootfs.tar"
            run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(tarball), "."],
                timeout=600)
            podman(
                "import",
                "--change", "CMD [\"/sbin/init\"]" if systemd else "CMD [\"/bin/sh\"]",
                "--change", f"LABEL io.clusterforge.lab.packages={','.join(sorted(packages))}",
                str(tarball), tag,
                timeout=600,
            )
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return tag


def _customize(rootfs: Path) -> None:
    """Make the bootstrapped tree a neutral image: no host keys, no caches, lean shell."""
    for key in (rootfs / "etc/ssh").glob("ssh_host_*"):
        key.unlink()
    for d in (rootfs / "var/lib/apt/lists", rootfs / "var/cache/apt/archives"):
        if d.is_dir():
            for p in d.iterdir():
                if p.is_file():
                    p.unlink()
    (rootfs / "etc/machine-id").write_text("")
    # minimal root shell environment (no mesg, no heavy rc files)
    (rootfs / "root/.profile").write_text(
        '# clusterforge lab\n[ -n "$BASH" ] && [ -f ~/.bashrc ] && . ~/.bashrc\n'
    )
    (rootfs / "root/.bashrc").write_text("# clusterforge lab: intentionally minimal\n")
    (rootfs / "etc/hostname").write_text("localhost\n")


def customize_shape(rootfs: Path, shape: str) -> None:
    """An Ubuntu- or EL-shaped host: its LAB-ONLY /etc/os-release; on EL, dnf set up as an EL9 host's (the
    release version 9; Debian's packaging of dnf-plugins-core enables the `local` plugin, which EL does not
    install by default: off), and an empty versionlock list."""
    text = SHAPE_OS_RELEASE.get(shape)
    if text is None:
        return
    osr = rootfs / "usr/lib/os-release"
    osr.parent.mkdir(parents=True, exist_ok=True)
    (rootfs / "etc/os-release").unlink(missing_ok=True)
    osr.write_text(text + "CLUSTERFORGE_LAB_ONLY=yes\n")
    (rootfs / "etc/os-release").symlink_to("../usr/lib/os-release")
    if "dnf" in SHAPE_PACKAGES.get(shape, ()):  # an EL shape (rocky9, alma9, rhel9)
        (rootfs / "etc/dnf/vars").mkdir(parents=True, exist_ok=True)
        (rootfs / "etc/dnf/vars/releasever").write_text("9\n")
        local = rootfs / "etc/dnf/plugins/local.conf"
        if local.exists():
            local.write_text("# LAB-ONLY (clusterforge): EL installs no dnf local plugin by default\n"
                             "[main]\nenabled=0\n")
        (rootfs / "etc/dnf/plugins").mkdir(parents=True, exist_ok=True)
        (rootfs / "etc/dnf/plugins/versionlock.list").write_text("")
        (rootfs / "etc/yum.repos.d").mkdir(parents=True, exist_ok=True)


#: The lab's own sshd (its config, host key and authorized_keys are bind-mounted from the lab state).
LAB_SSHD_UNIT = """[Unit]
Description=clusterforge lab sshd (LAB-ONLY: the lab's key-only root login on the lab network)
After=network.target

[Service]
ExecStartPre=/bin/mkdir -p /run/sshd
ExecStart=/usr/sbin/sshd -D -e -f /etc/clusterforge-lab/sshd_config
Restart=always

[Install]
WantedBy=multi-user.target
"""

#: Debian's opensm.service is a oneshot that needs /sys/class/infiniband_mad (no such thing in a
#: container): the lab replaces it with a unit that runs OpenSM through the lab's wrapper (umad2sim ->
#: the simulator), as the host's first HCA, with the deployed /etc/opensm/opensm.conf.
LAB_OPENSM_UNIT = """[Unit]
Description=OpenSM on the lab's simulated fabric (clusterforge LAB-ONLY unit: the wrapper attaches it to ibsim)
After=network.target

[Service]
Type=simple
ExecStartPre=/bin/mkdir -p /var/cache/opensm
ExecStart=/usr/local/sbin/opensm -F /etc/opensm/opensm.conf -f /var/log/opensm.log
ExecReload=/bin/kill -HUP $MAINPID
Restart=on-failure
RestartSec=2

[Install]
WantedBy=multi-user.target
"""


#: Rail planes: the deploy installs opensm-plane@.service (one OpenSM per plane, /usr/sbin/opensm -F
#: /etc/opensm/plane<P>/opensm.conf). This LAB-ONLY drop-in runs it through the lab's wrapper instead, told its
#: plane, so that each instance attaches to the simulator as the host's HCA in that plane.
LAB_OPENSM_PLANE_DROPIN = """[Unit]
Description=OpenSM for rail plane %i on the lab's simulated fabric (clusterforge LAB-ONLY drop-in: via the wrapper)

[Service]
Environment=CLUSTERFORGE_LAB_OPENSM_PLANE=%i
ExecStart=
ExecStart=/usr/local/sbin/opensm -F /etc/opensm/plane%i/opensm.conf
"""


def _customize_systemd(rootfs: Path) -> None:
    """systemd as PID 1 in a container: the lab's sshd unit enabled, Debian's ssh and opensm units out of
    the way (the deploy enables OpenSM itself), nothing that needs hardware or a network out."""
    etc = rootfs / "etc/systemd/system"
    for wants in ("multi-user.target.wants/ssh.service", "network-online.target.wants/opensm.service",
                  "sshd.service", "getty.target.wants/getty@tty1.service",
                  "timers.target.wants/apt-daily.timer", "timers.target.wants/apt-daily-upgrade.timer"):
        (etc / wants).unlink(missing_ok=True)
    for masked in ("ssh.service", "ssh.socket", "getty@tty1.service", "console-getty.service"):
        target = etc / masked
        target.unlink(missing_ok=True)
        target.symlink_to("/dev/null")
    (etc / "cf-lab-sshd.service").write_text(LAB_SSHD_UNIT)
    (etc / "multi-user.target.wants").mkdir(parents=True, exist_ok=True)
    (etc / "multi-user.target.wants" / "cf-lab-sshd.service").symlink_to("/etc/systemd/system/cf-lab-sshd.service")
    (etc / "opensm.service").write_text(LAB_OPENSM_UNIT)
    (etc / "opensm-plane@.service.d").mkdir(parents=True, exist_ok=True)
    (etc / "opensm-plane@.service.d" / "cf-lab.conf").write_text(LAB_OPENSM_PLANE_DROPIN)
