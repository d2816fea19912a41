"""Package names and pinned versions per component and OS family, derived from `software` pins.

One function feeds both the deploy and the lab's stand-in repository, so the names and
versions the deploy asks for are exactly what the stand-in repository offers. The names are the
catalog's (catalog/os.yaml, `packages`), of the host's family (debian, ubuntu, el9: docs/os.md); every
function takes the family, Debian's by default.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog import catalog
from ..model.services import SoftwarePins

DEFAULT_FAMILY = "debian"
"""The family of a node that declares no OS (profiles[].os defaults to debian12)."""


def names(component: str, *, family: str = DEFAULT_FAMILY, branch: str = "", cuda: str = "",
          kernel: str = "") -> list[str]:
    """The catalog's package names of `component` in `family`."""
    return catalog().os.package_names(family, component, branch=branch, cuda=cuda, kernel=kernel)


def module_streams(component: str, *, family: str = DEFAULT_FAMILY, branch: str = "") -> tuple[str, ...]:
    """The dnf module stream `component`'s packages come from in `family` (EL9's driver:
    `nvidia-driver:550-open`), enabled before they are installed; none elsewhere."""
    entry = catalog().os.packages[family].get(component)
    return (entry.module.format(branch=branch),) if entry is not None and entry.module else ()


@dataclass(frozen=True, order=True)
class Pin:
    package: str
    version: str
    hold: bool = True
    driver: bool = False
    """The GPU driver's own package (the last of the `nvidia` names: nvidia-driver-550, nvidia-open): what the
    loaded kernel module is compared with after an install (a reboot is needed when they differ)."""


def deb_version(pin: str) -> str:
    """An inventory pin as a Debian version: `550.90.07` -> `550.90.07-1`; with a revision, as is."""
    return pin if "-" in pin else f"{pin}-1"


def driver_branch(driver: str) -> str:
    return driver.split(".", 1)[0]


def cuda_tag(cuda: str | None) -> str:
    """`12.4.1` -> `+cuda12.4` (NVIDIA's NCCL package suffix); no CUDA pin: no suffix."""
    if cuda is None:
        return ""
    major_minor = ".".join(cuda.split(".")[:2])
    return f"+cuda{major_minor}"


def nvidia_pins(sw: SoftwarePins, nvswitch: bool, family: str = DEFAULT_FAMILY) -> list[Pin]:
    if sw.nvidia_driver is None:
        return []
    branch = driver_branch(sw.nvidia_driver)
    version = deb_version(sw.nvidia_driver)
    driver = names("nvidia", family=family, branch=branch)
    pins = [Pin(n, version, driver=i == len(driver) - 1) for i, n in enumerate(driver)]
    if nvswitch:  # Fabric Manager pinned to exactly the driver's version (skew after an upgrade breaks NVLink)
        pins += [Pin(n, version) for n in names("fabricmanager", family=family, branch=branch)]
    return pins


def ofed_pins(sw: SoftwarePins, family: str = DEFAULT_FAMILY) -> list[Pin]:
    return [] if sw.doca_ofed is None else [Pin(n, deb_version(sw.doca_ofed)) for n in names("ofed", family=family)]


def nccl_pins(sw: SoftwarePins, family: str = DEFAULT_FAMILY) -> list[Pin]:
    if sw.nccl is None:
        return []
    version = deb_version(sw.nccl) + cuda_tag(sw.cuda)
    pins = [Pin(n, version) for n in names("nccl", family=family)]
    if sw.nccl_tests is not None:
        pins += [Pin(n, deb_version(sw.nccl_tests)) for n in names("nccl_tests", family=family)]
    return pins


def lustre_pins(sw: SoftwarePins, family: str = DEFAULT_FAMILY) -> list[Pin]:
    if sw.lustre_client is None:
        return []
    version = deb_version(sw.lustre_client)
    return [Pin(n, version) for n in names("lustre_client", family=family)]


DCGM_EXPORTER_PACKAGE = "dcgm-exporter"
"""NVIDIA's dcgm-exporter as a Debian package (/usr/bin/dcgm-exporter); the lab's is a stand-in of that name."""


def dcgm_pins(sw: SoftwarePins) -> list[Pin]:
    """dcgm-exporter on GPU nodes (the monitoring component's exporters path), pinned like the other NVIDIA parts."""
    return [] if sw.dcgm_exporter is None else [Pin(DCGM_EXPORTER_PACKAGE, deb_version(sw.dcgm_exporter))]


TELEGRAF_PACKAGE = "telegraf"
"""InfluxData's Telegraf (the `telegraf` collector): from the site's InfluxData repository; a stand-in in the lab."""


def telegraf_pins(sw: SoftwarePins) -> list[Pin]:
    return [] if sw.telegraf is None else [Pin(TELEGRAF_PACKAGE, deb_version(sw.telegraf))]


LEMUR_AGENT_PACKAGE = "lemur-hsm-agent"
LEMUR_MOVERS_PACKAGE = "lemur-data-movers"
"""Lemur's packages as its own packaging names them (whamcloud/lemur, packaging/rpm/lemur.spec): the agent
(/usr/sbin/lhsmd) and the data movers (/usr/libexec/lhsmd/lhsm-plugin-s3, -posix). Neither Debian nor PyPI has
them: the site builds them into its repository; the lab's are stand-ins of these names."""


def lemur_pins(sw: SoftwarePins) -> list[Pin]:
    """The HSM copytool on the archive's agent nodes (the `hsm` component): one name in every family."""
    if sw.lemur is None:
        return []
    version = deb_version(sw.lemur)
    return [Pin(LEMUR_AGENT_PACKAGE, version), Pin(LEMUR_MOVERS_PACKAGE, version)]


def all_pins(sw: SoftwarePins, family: str = DEFAULT_FAMILY) -> list[Pin]:
    """Every pinned package of an environment in `family` (what a mirror or stand-in repo must hold)."""
    return sorted({*nvidia_pins(sw, True, family), *ofed_pins(sw, family), *nccl_pins(sw, family),
                   *lustre_pins(sw, family), *dcgm_pins(sw), *telegraf_pins(sw), *lemur_pins(sw)})


def headers_package(kernel_release: str, family: str = DEFAULT_FAMILY) -> str:
    """The running kernel's headers, which DKMS builds the driver and OFED against: linux-headers-<release>
    on apt families, kernel-devel-<release> on EL."""
    return names("kernel_headers", family=family, kernel=kernel_release)[0]
