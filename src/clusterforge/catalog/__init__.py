"""Hardware catalog: switch/HCA/GPU models, link rates, cable media, cooling limits.

The figures live in YAML data files beside this module, each with its source noted.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Split(_Entry):
    ways: int
    rate: str


class SwitchModel(_Entry):
    family: str
    ports: int
    rate: str
    split: Split | None = None
    power_w: float
    ru: int
    device_id: int
    source: str
    fw_tool: str | None = None
    """How its firmware is queried and flashed: `switch-os` (a managed switch updates itself) or
    `mlxfwmanager-inband` (an unmanaged one, from a host through the fabric: `-d lid-<LID>`)."""


class HcaModel(_Entry):
    kind: str
    max_rate: str
    rates: list[str]
    ports: list[int]
    ca_type: str
    source: str
    fw_device_type: str | None = None
    """What `mlxfwmanager --query` prints as `Device Type` (ConnectX7, BlueField3)."""
    fw_tool: str = "mlxfwmanager"
    """The tool that queries and flashes it from its host."""
    fw_activation: Literal["mlxfwreset", "reboot"] = "mlxfwreset"
    """How a flashed image starts running (a day-2 firmware bump plans it after the flash, before the
    validation): `mlxfwreset` (`mlxfwreset -d <card> -y reset`: the card reloads its firmware, the host stays
    up) or `reboot` (the host is rebooted)."""


class RateInfo(_Entry):
    gbps: int
    lanes: int
    lane_gbps: int
    width: str


class MediaInfo(_Entry):
    description: str
    max_reach_m: dict[str, Any]
    orderable_m: list[float]
    source: str
    fibers_per_link: dict[str, int] | None = None


class GpuModel(_Entry):
    smi_name: str
    link_gbs: float
    nvlink_gen: int
    nvlink_links: int
    nvlink_class: str | None
    form: str
    power_w: float
    source: str
    pcie_gen: int | None = None
    """The PCIe generation the GPU's host link runs at (what `nvidia-smi -q` should show under load)."""


class BerLimits(_Entry):
    raw_fec_limit: float
    raw_fec_limit_source: str
    raw_warn: float
    raw_warn_source: str
    effective_max: float
    effective_max_source: str


class ModuleLimits(_Entry):
    media: list[str]
    rx_power_min_dbm: float
    tx_power_min_dbm: float
    temperature_max_c: float
    source: str


class FastErrorRate(_Entry):
    errors_per_h: float
    reason: str
    """The arithmetic: the rate's bits an hour times `FastErrors.ber`."""


class FastErrors(_Entry):
    """The fast tier of monitoring's symbol and receive error alerts: per link rate, the errors an hour that
    alert when held in each of three consecutive short windows (link_health.yaml `fast_errors`)."""

    ber: float
    ber_source: str
    per_rate: dict[str, FastErrorRate]


class LinkHealth(_Entry):
    """What validate holds a port's physical layer to, and monitoring's fast error tier (link_health.yaml)."""

    ber: BerLimits
    module: ModuleLimits
    fast_errors: FastErrors


class OsRelease(_Entry):
    family: str
    name: str
    os_release_id: str
    version_id: str
    codename: str | None = None


class NodeExporterUnit(_Entry):
    """How a family's node_exporter package runs: its unit and the file of arguments the deploy writes. With
    `binary`, the package's own unit is not told how to read that file, so the deploy adds a drop-in that runs
    `binary` with the file's ARGS (EPEL's package); without, the unit reads the file itself (Debian's)."""

    unit: str
    settings: str
    binary: str | None = None
    source: str


class OsFamily(_Entry):
    package_manager: Literal["apt", "dnf"]
    repository: str
    pin: str
    driver_min_branch: int | None = None
    driver_min_branch_source: str | None = None
    selinux: bool = False
    """Hosts of this family run SELinux enforcing: each written file is given its policy's context."""
    not_deployed: dict[str, str] = {}
    """component -> why the deploy does not install it on this family yet (its preflight fails with that)."""
    node_exporter: NodeExporterUnit
    firewall: bool = False
    """Hosts of this family run firewalld: the deploy opens the ports its components listen on (deploy/firewall)."""


class PackageNames(_Entry):
    """A component's packages in one family: `names` ({branch}, {cuda}, {kernel} filled in), other names from a
    driver branch on (`from_branch`), a dnf module stream enabled first (`module`)."""

    names: list[str]
    from_branch: dict[int, list[str]] = {}
    module: str | None = None

    def for_branch(self, branch: int | None) -> list[str]:
        later = [b for b in self.from_branch if branch is not None and branch >= b]
        return self.from_branch[max(later)] if later else self.names


class OsCatalog(_Entry):
    """The operating systems a node may run, by release, what each family installs with, and each family's
    package names per component (os.yaml)."""

    releases: dict[str, OsRelease]
    families: dict[str, OsFamily]
    packages: dict[str, dict[str, PackageNames]]
    packages_source: str

    def package_names(self, family: str, component: str, *, branch: str = "", cuda: str = "",
                      kernel: str = "") -> list[str]:
        """The names `family` installs `component` under, filled in: `package_names("debian", "nvidia",
        branch="550")` -> ["nvidia-driver-550"]."""
        entry = self.packages[family][component]
        number = int(branch) if branch.isdigit() else None
        return [n.format(branch=branch, cuda=cuda, kernel=kernel) for n in entry.for_branch(number)]

    def family_of(self, release: str) -> OsFamily | None:
        rel = self.releases.get(release)
        return self.families.get(rel.family) if rel is not None else None


class CoolingInfo(_Entry):
    max_kw: float
    pue: float
    liquid: bool


_LINKS_UP = frozenset(frozenset(p) for p in (("HDR", "HDR100"), ("NDR", "NDR200"), ("HDR", "EDR"), ("NDR", "HDR"),
                                             ("XDR", "NDR")))


class Catalog(_Entry):
    switches: dict[str, SwitchModel]
    hcas: dict[str, HcaModel]
    rates: dict[str, RateInfo]
    media: dict[str, MediaInfo]
    gpus: dict[str, GpuModel]
    cooling: dict[str, CoolingInfo]
    leak_sensors_per_m2: float
    link_health: LinkHealth
    os: OsCatalog

    def reach(self, media: str, rate: str, fiber_type: str | None = None) -> float | None:
        """Maximum reach in metres of `media` at `rate`, or None when unsupported."""
        info = self.media.get(media)
        if info is None:
            return None
        table = info.max_reach_m
        if media == "fiber":
            table = table.get(fiber_type or "OM4", {})
        value = table.get(rate)
        return float(value) if value is not None else None

    def slower(self, a: str | None, b: str | None) -> str | None:
        """The rate a link runs at: the slower of its ends' rates (ties: `a`); None when neither is known."""
        if a is None or b is None or a == b:
            return a or b
        return a if self.rates[a].gbps <= self.rates[b].gbps else b

    @staticmethod
    def links_up(a: str, b: str) -> bool:
        """Do ports at rates `a` and `b` form a link: the same rate, one the other's split, or one
        generation apart (HDR-HDR100, NDR-NDR200, HDR-EDR, NDR-HDR, XDR-NDR)."""
        return a == b or frozenset((a, b)) in _LINKS_UP

    def orderable_length(self, media: str, length_m: float) -> float | None:
        """The shortest orderable length of `media` that covers `length_m`."""
        for size in self.media[media].orderable_m:
            if size >= length_m:
                return size
        return None


def _read(name: str) -> Any:
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    return yaml.safe_load(text)


@cache
def catalog() -> Catalog:
    cooling = _read("cooling.yaml")
    sensors = cooling.pop("leak_sensors_per_m2")
    return Catalog(
        switches=_read("switches.yaml"),
        hcas=_read("hcas.yaml"),
        rates=_read("rates.yaml"),
        media=_read("media.yaml"),
        gpus=_read("gpus.yaml"),
        cooling=cooling,
        leak_sensors_per_m2=sensors,
        link_health=_read("link_health.yaml"),
        os=_read("os.yaml"),
    )

