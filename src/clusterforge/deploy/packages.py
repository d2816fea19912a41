"""Package names and pinned versions per component, derived from `software` pins.

One function feeds both the deploy and the lab's stand-in repository, so the names and
versions the deploy asks for are exactly what the stand-in repository offers. The names are the
catalog's (catalog/os.yaml, `packages`), of the family the deploy installs today: Debian's (docs/os.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog import catalog
from ..model.services import SoftwarePins

FAMILY = "debian"
"""The family whose package names the deploy installs (every host, until the deploy speaks apt-on-Ubuntu
and dnf: #34)."""


def names(component: str, *, branch: str = "", cuda: str = "", kernel: str = "") -> list[str]:
    """The catalog's package names of `component` for the deploy's family."""
    return catalog().os.package_names(FAMILY, component, branch=branch, cuda=cuda, kernel=kernel)


@dataclass(frozen=True, order=True)
class Pin:
    package: str
    version: str
    hold: bool = True


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


def nvidia_pins(sw: SoftwarePins, nvswitch: bool) -> list[Pin]:
    if sw.nvidia_driver is None:
        return []
    branch = driver_branch(sw.nvidia_driver)
    version = deb_version(sw.nvidia_driver)
    pins = [Pin(n, version) for n in names("nvidia", branch=branch)]
    if nvswitch:  # Fabric Manager pinned to exactly the driver's version (skew after an upgrade breaks NVLink)
        pins += [Pin(n, version) for n in names("fabricmanager", branch=branch)]
    return pins


def ofed_pins(sw: SoftwarePins) -> list[Pin]:
    return [] if sw.doca_ofed is None else [Pin(n, deb_version(sw.doca_ofed)) for n in names("ofed")]


def nccl_pins(sw: SoftwarePins) -> list[Pin]:
    if sw.nccl is None:
        return []
    version = deb_version(sw.nccl) + cuda_tag(sw.cuda)
    pins = [Pin(n, version) for n in names("nccl")]
    if sw.nccl_tests is not None:
        pins += [Pin(n, deb_version(sw.nccl_tests)) for n in names("nccl_tests")]
    return pins


def lustre_pins(sw: SoftwarePins) -> list[Pin]:
    if sw.lustre_client is None:
        return []
    version = deb_version(sw.lustre_client)
    return [Pin(n, version) for n in names("lustre_client")]


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
    """The HSM copytool on the archive's agent nodes (the `hsm` component)."""
    if sw.lemur is None:
        return []
    version = deb_version(sw.lemur)
    return [Pin(LEMUR_AGENT_PACKAGE, version), Pin(LEMUR_MOVERS_PACKAGE, version)]


def all_pins(sw: SoftwarePins) -> list[Pin]:
    """Every pinned package of an environment (what a mirror or stand-in repo must hold)."""
    return sorted({*nvidia_pins(sw, True), *ofed_pins(sw), *nccl_pins(sw), *lustre_pins(sw), *dcgm_pins(sw),
                   *telegraf_pins(sw), *lemur_pins(sw)})


def headers_package(kernel_release: str) -> str:
    return f"linux-headers-{kernel_release}"
