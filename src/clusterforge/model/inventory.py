"""The root of the model: one Inventory per environment."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from .acceptance import Acceptance
from .addressing import AddressPlan
from .allocations import Allocations
from .base import (
    Currency,
    FilePath,
    FiniteFloat,
    Guid,
    HcaName,
    ItemKey,
    Model,
    Name,
    PackageMirror,
    PortRef,
    RpmMirror,
    Text,
    UserName,
)
from .cabling import Cable, PatchPanel, Trunk
from .fabric import FabricSpec
from .firmware import Firmware
from .hardware import Profile
from .health import HealthCheck
from .hooks import HOST, HOSTS, REASON, takes_many
from .monitoring import Monitoring
from .nodes import Node, Switch
from .services import LustreFs, OpenSm, SoftwarePins
from .site import Rack, Site
from .storage import StorageSizing


class HcaRef(Model):
    """An HCA of a node, written `node/mlx5_0`."""

    device: Name = Field(description="node name")
    hca: HcaName = Field(description="HCA name on the node")

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            parts = value.split("/")
            if len(parts) != 2:
                raise ValueError(f"{value!r} is not an HCA reference: write 'node/HCA'")
            return {"device": parts[0], "hca": parts[1]}
        return value

    def __str__(self) -> str:
        return f"{self.device}/{self.hca}"


class GuidLocks(Model):
    """GUIDs learned from the fabric (`clusterforge learn`) and locked for later validations."""

    switches: dict[Name, Guid] = Field(default_factory=dict, description="switch node GUIDs")
    hcas: dict[HcaRef, Guid] = Field(default_factory=dict, description="HCA node GUIDs")
    ports: dict[PortRef, Guid] = Field(default_factory=dict, description="HCA port GUIDs")


class PriceTable(Model):
    currency: Currency = Field(default="USD", description="ISO 4217 currency code")
    example: bool = Field(default=True, description="true: illustrative prices, not a quote")
    items: dict[ItemKey, FiniteFloat] = Field(default_factory=dict,
        description="part key (e.g. cable/DAC/HDR) -> unit price")


class RebootPolicy(Model):
    mode: Literal["none", "when-needed", "rolling-by-rack"] = Field(default="when-needed",
        description="when the deploy reboots hosts")
    drain: list[Text] = Field(default_factory=list,
                              description="argv that drains hosts (the one path to the scheduler: deploy reboots, "
                                          "day-2 waves, the monitoring drain hook, the node health check): `{host}` "
                                          "for one call a host, or `{hosts}` for one call a group, as a Slurm "
                                          "hostlist; `{reason}`: who drains and why (`scontrol update "
                                          "nodename={hosts} state=drain reason={reason}`)")
    resume: list[Text] = Field(default_factory=list,
                               description="argv run after the host is back (`{host}` or `{hosts}`, as drain)")
    reasons: list[Text] = Field(default_factory=list,
                                description="argv that lists the nodes the scheduler holds out of service and "
                                            "why, as `sinfo -R` prints them (`[sinfo, -R, -o, '%60E %9u %19H %6t "
                                            "%N']` keeps a reason whole); the floor page shows them. No "
                                            "placeholders")
    timeout_s: int = Field(default=900, ge=30, description="seconds to wait for a host to come back")

    @field_validator("reasons")
    @classmethod
    def _no_placeholders(cls, argv: list[str]) -> list[str]:
        if any(k in a for a in argv for k in (HOST, HOSTS, REASON)):
            raise ValueError("lists every node's reason: it takes no {host}, {hosts} or {reason}")
        return argv

    @field_validator("drain", "resume")
    @classmethod
    def _one_way_of_naming_hosts(cls, argv: list[str]) -> list[str]:
        if any(HOST in a for a in argv) and takes_many(argv):
            raise ValueError("names both {host} (a call a host) and {hosts} (a call a group): use one")
        return argv


class DrainCap(Model):
    """How much compute a day-2 change plan may drain at once; the plan goes in waves to stay within it."""

    rack_percent: int = Field(default=50, ge=1, le=100,
                              description="most compute nodes of one rack drained at once, in percent of the "
                                          "rack's compute nodes (at least one node)")
    cluster_percent: int = Field(default=25, ge=1, le=100,
                                 description="most compute nodes drained at once across the cluster, in percent "
                                             "of all compute nodes (at least one node)")


class CollectSettings(Model):
    """What `validate` collects beyond what every host is asked for."""

    link_health: bool = Field(default=False,
        description="also collect `mlxlink -d <hca> -p <port> -m -c` (MFT, or mstflint's mstlink) on every cabled "
                    "HCA port and check its BER and module readings against the catalog's link_health limits "
                    "(LINK-BER, LINK-FLAP, LINK-MODULE; docs/validate.md); its output is then required")


class PackageMirrors(Model):
    """Per OS family, where its nodes' pinned packages come from (what `package_mirror` is for Debian)."""

    ubuntu: PackageMirror | None = Field(
        default=None, description="Ubuntu nodes' apt source, `URL [SUITE [COMPONENT...]]` (else package_mirror)")
    el9: RpmMirror | None = Field(
        default=None, description="EL9 nodes' dnf repository, `URL [gpgkey=URL] [gpgcheck=0|1]`: the baseurl, its "
                                  "signing key (gpgcheck=1 unless gpgcheck=0 is given)")


class DeploySettings(Model):
    reboot: RebootPolicy = Field(default_factory=RebootPolicy, description="reboot policy")
    max_drain: DrainCap = Field(default_factory=DrainCap,
                                description="day-2 plans: the most compute drained at once (work that takes a "
                                            "whole rack or switch out, e.g. a cooling change or a failed leaf, "
                                            "goes alone in its wave)")
    ssh_user: UserName = Field(default="root", description="SSH user of the deploy and the collectors")
    ssh_port: int = Field(default=22, ge=1, le=65535, description="SSH port")
    parallel: int = Field(
        default=64, ge=1, le=4096,
        description="hosts worked on at once by the deploy and the collectors: pyinfra's parallel connections "
                    "(about 2 MB of controller memory each), Ansible's forks (40-65 MB each, so Ansible's are "
                    "further capped to what leaves 6 GiB of the controller's memory free; docs/scale.md)")
    connect_retries: int = Field(
        default=2, ge=0, le=10,
        description="a refused, reset or timed-out SSH connect tried again this many times (0.2-2 s apart for "
                    "the deploy, 1 s for the collectors) before the host is unreachable")
    known_hosts: FilePath | None = Field(default=None, description="path, relative to the environment")
    package_mirror: PackageMirror | None = Field(
        default=None, description="`URL [SUITE [COMPONENT...]]`; the URL http://, https:// or file://: the apt "
                                  "source of Debian nodes, and of Ubuntu nodes where package_mirrors names none")
    package_mirrors: PackageMirrors = Field(
        default_factory=PackageMirrors,
        description="the package source of each OS family its nodes' pins come from (docs/os.md)")


class Inventory(Model):
    schema_version: Literal[1] = Field(default=1, description="inventory format version")
    site: Site = Field(description="the site: name, location, rows")
    racks: list[Rack] = Field(default_factory=list, description="racks")
    profiles: list[Profile] = Field(default_factory=list, description="named node hardware")
    nodes: list[Node] = Field(default_factory=list, description="servers")
    switches: list[Switch] = Field(default_factory=list,
        description="InfiniBand switches (declared, or generated by the planner from `fabric`)")
    cables: list[Cable] = Field(default_factory=list, description="cables between ports")
    patch_panels: list[PatchPanel] = Field(default_factory=list, description="MPO patch panels")
    trunks: list[Trunk] = Field(default_factory=list, description="MPO-24 trunks between patch panels")
    addressing: AddressPlan = Field(default_factory=AddressPlan, description="address plan")
    allocations: Allocations = Field(
        default_factory=Allocations,
        description="frozen addresses, written to addresses.generated.yaml by `plan --write` or the first deploy",
    )
    software: SoftwarePins = Field(default_factory=SoftwarePins, description="software version pins")
    lustre: list[LustreFs] = Field(default_factory=list, description="Lustre file systems the nodes mount")
    storage_sizing: StorageSizing = Field(default_factory=StorageSizing,
        description="what `plan storage` weighs the storage tiers with (docs/storage.md)")
    opensm: OpenSm | None = Field(default=None, description="OpenSM subnet managers and partitions")
    fabric: FabricSpec | None = Field(default=None, description="the planner's input (docs/planner.md)")
    guid_locks: GuidLocks = Field(default_factory=GuidLocks,
        description="GUIDs learned from the built fabric (`clusterforge learn`)")
    prices: PriceTable | None = Field(default=None, description="prices for the bill of materials")
    deploy: DeploySettings = Field(default_factory=DeploySettings, description="deploy settings")
    collect: CollectSettings = Field(default_factory=CollectSettings,
                                     description="what validate collects (docs/validate.md)")
    monitoring: Monitoring | None = Field(default=None, description="health monitoring (docs/monitoring.md)")
    firmware: Firmware | None = Field(default=None, description="firmware pins (docs/firmware.md)")
    acceptance: Acceptance = Field(default_factory=Acceptance,
                                   description="what the acceptance run expects (docs/accept.md)")
    health_check: HealthCheck = Field(default_factory=HealthCheck,
                                      description="the node health check Slurm runs (docs/health.md)")
