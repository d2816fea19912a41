"""Storage tiers of a Lustre file system (docs/storage.md): the server side (targets on their servers,
failover, devices and RAID layout), the clients' striping defaults, a per-node cache tier (Lustre
Persistent Client Cache on the node's own NVMe) and an archive tier (Lustre HSM with a copytool to an
S3 object store). Also the sizing settings `plan storage` reads: what a device reads, what a GPU asks.

Credentials are referenced, never held: an archive names a credentials file or an environment
variable, and a value that looks like a key itself is refused when the inventory loads.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from ..util.errors import ACCESS_KEY_ID
from .base import AbsPath, FiniteFloat, Model, Name, Url
from .nodes import NodeRole

TargetKind = Literal["mgt", "mdt", "ost"]
Layout = Literal["none", "raid1", "raid10", "raid5", "raid6"]
DeviceKind = Literal["nvme", "optane-pmem", "ssd", "hdd"]

LAYOUT_MIN_DEVICES: dict[str, int] = {"none": 1, "raid1": 2, "raid10": 4, "raid5": 3, "raid6": 4}
"""The fewest devices each layout is built from (raid10 also needs an even count)."""


def data_devices(layout: str, devices: int) -> float:
    """Devices' worth of capacity a layout leaves for data: raid1 keeps one copy's, raid10 half,
    raid5 one device less, raid6 two less, none all of them."""
    if layout == "raid1":
        return 1.0
    if layout == "raid10":
        return devices / 2
    if layout == "raid5":
        return float(devices - 1)
    if layout == "raid6":
        return float(devices - 2)
    return float(devices)


# --- credentials by reference only ---------------------------------------------------------------
_TOKEN = re.compile(r"[A-Za-z0-9+/=_-]{16,}")


def looks_like_access_key(text: str) -> bool:
    """True when `text` holds a cloud access key id (`AKIA...`, `ASIA...`): never echoed, whatever field."""
    return bool(ACCESS_KEY_ID.search(text))


def looks_like_secret(text: str) -> bool:
    """True when `text` (or a piece of it between `/`, `.`, `@` or `:`) looks like a key rather than a name:
    an access key id, a run of 32 or more base64/hex characters, or 16 or more letters and digits mixed
    with no word separator (`_` or `-`) in them. Names such as `CEPH_S3_CREDENTIALS` or
    `/etc/lustre/s3.cred` pass."""
    if ACCESS_KEY_ID.search(text):
        return True
    for piece in re.split(r"[/.@:]", text):
        if not _TOKEN.fullmatch(piece):
            continue
        if len(piece) >= 32 and not re.search(r"[_-]", piece):
            return True
        if re.search(r"[A-Za-z]", piece) and re.search(r"[0-9]", piece) and not re.search(r"[_-]", piece):
            return True
    return False


_SECRET_KEY = re.compile(r"(?i)secret|password|passwd|token|access|key")
"""Keys of a credentials mapping that would hold the secret itself (`access_key`, `secret_key`, ...)."""

EnvName = Annotated[str, Field(pattern=r"^[A-Z_][A-Z0-9_]{0,63}$")]


class CredentialsRef(Model):
    """Where the copytool finds its S3 keys: a file on the agent nodes, or an environment variable of its
    service. Exactly one of the two; never the keys themselves."""

    file: AbsPath | None = Field(default=None,
        description="path of the credentials file on the agent nodes (e.g. /etc/lustre/hsm-s3.cred, mode 0600); "
                    "its content is never read by clusterforge")
    env: EnvName | None = Field(default=None,
        description="name of the environment variable holding the credentials in the copytool's service "
                    "(e.g. HSM_S3_CREDENTIALS), set by the site's secret store")

    @model_validator(mode="before")
    @classmethod
    def _no_keys_here(cls, value: Any) -> Any:
        """The keys themselves, in whatever spelling, are refused with a message that says why."""
        if isinstance(value, str):
            what = "looks like an inline secret" if looks_like_secret(value) else "is not a reference"
            raise ValueError(f"the credentials value {what}: write {{file: PATH}} or {{env: NAME}}, and keep the "
                             "keys out of the inventory")
        if isinstance(value, dict):
            keys = [k for k in value if isinstance(k, str) and _SECRET_KEY.search(k)]
            if keys:
                raise ValueError(f"{', '.join(sorted(keys))}: the inventory holds no secrets; put the keys in a "
                                 "file on the agent nodes (`file: PATH`) or the copytool's environment (`env: NAME`)")
        return value

    @model_validator(mode="after")
    def _one_reference(self) -> CredentialsRef:
        if (self.file is None) == (self.env is None):
            raise ValueError("give exactly one of `file` (a credentials file's path) or `env` (a variable's name)")
        for what, value in (("file", self.file), ("env", self.env)):
            if value is not None and looks_like_secret(value):
                raise ValueError(f"{what} looks like an inline secret (a key, not a reference): name a "
                                 "credentials file or an environment variable instead, and keep the key out of "
                                 "the inventory")
        return self


# --- the server side ------------------------------------------------------------------------------
class LustreTarget(Model):
    """One target: the management target (MGT), a metadata target (MDT) or an object storage target (OST),
    built on devices of its server's local storage and served by that server, its failover partner
    taking it over."""

    kind: TargetKind = Field(description="mgt (the MGS's), mdt (metadata) or ost (object storage)")
    index: int = Field(default=0, ge=0, le=0xFFFF, description="target index (MDT0000, OST0007: 0 and 7); "
                       "unique per kind within the file system")
    server: Name = Field(description="the storage server that serves the target (one of the file system's "
                         "`servers`)")
    failover: Name | None = Field(default=None,
        description="the server that takes the target over: the server's partner in `failover_pairs` "
                    "(default: that partner, or none when the server is in no pair)")
    devices: int = Field(ge=1, le=256, description="local devices of the server the target is built on "
                         "(counted against the server's `storage` of the target's role)")
    device_kind: DeviceKind | None = Field(default=None,
        description="kind of those devices (default: the kind of the server's devices of the target's role)")
    layout: Layout = Field(default="raid6",
        description="how the devices are combined: raid6 by default, because a target of large SSDs must "
                    "survive a second device failing while the first rebuilds (usable = devices - 2); raid10 "
                    "or raid1 suits metadata (small random writes)")
    size_tb: FiniteFloat | None = Field(default=None, gt=0,
        description="formatted size, TB (checked to fit the layout's usable capacity; default: all of it)")
    block_device: AbsPath | None = Field(default=None,
        description="block device mkfs.lustre formats (an md RAID or multipath device, e.g. /dev/md/ost0)")
    mgs: bool = Field(default=False, description="an MDT that also holds the MGS (combined MGS/MDT)")


class Striping(Model):
    """The file system's default layout for new files (`lfs setstripe -c COUNT -S SIZE` on the root)."""

    count: int = Field(default=1, ge=-1, le=2000,
        description="OSTs a file is striped over: 1 (Lustre's default), N, or -1 for all OSTs")
    size_mib: int = Field(default=1, ge=1, le=4096,
        description="stripe size, MiB (Lustre's default is 1 MiB)")

    @field_validator("count")
    @classmethod
    def _not_zero(cls, value: int) -> int:
        if value == 0:
            raise ValueError("stripe count 0 means 'the file system default': write the count, or -1 for all OSTs")
        return value


# --- the cache tier -------------------------------------------------------------------------------
_PCC_TERM = r"(?:uid|gid|projid|fname)=\{[A-Za-z0-9*._ -]{1,128}\}"
PCC_RULE = rf"^{_PCC_TERM}(?: ?[&|] ?{_PCC_TERM})*$"
"""`lctl pcc add`'s auto-attach rule: terms `uid={500}`, `projid={1000 1001}`, `fname={*.h5}` joined by & or |."""


class PersistentClientCache(Model):
    """Lustre Persistent Client Cache (PCC, Lustre 2.13+): files of the file system cached on a local file
    system of each client's own NVMe (or persistent memory), attached by a rule."""

    roles: list[NodeRole] = Field(
        default_factory=lambda: list[NodeRole](["compute"]), min_length=1,
        description="roles of the client nodes that get the cache")
    device_kind: DeviceKind = Field(default="nvme",
        description="local device kind the cache lives on: nvme or optane-pmem (the node's `storage` with "
                    "role cache)")
    size_tb: FiniteFloat = Field(gt=0, description="cache size on each node, TB (the brief: 2 TB)")
    mount: AbsPath = Field(default="/mnt/pcc", description="mount point of the cache's local file system")
    block_device: AbsPath | None = Field(default=None,
        description="block device of the cache's local file system (e.g. /dev/md/pcc over the NVMe drives)")
    archive_id: int = Field(default=1, ge=1, le=32,
        description="PCC back-end id (`rwid=` / `roid=`); distinct from the HSM archive's id when both exist")
    mode: Literal["readwrite", "readonly"] = Field(default="readwrite",
        description="readwrite (RW-PCC, Lustre 2.13+) or readonly (RO-PCC, Lustre 2.16+)")
    rule: Annotated[str, Field(pattern=PCC_RULE, max_length=512)] = Field(
        description="auto-attach rule of `lctl pcc add` (e.g. projid={1000}, fname={*.tfrecord})")


# --- the archive tier -----------------------------------------------------------------------------
Bucket = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")]


class ErasureCode(Model):
    """How the object store keeps its data: k data + m coding chunks (usable = k / (k + m) of raw)."""

    data: int = Field(default=4, ge=1, le=32, description="k, data chunks")
    coding: int = Field(default=2, ge=0, le=16,
        description="m, coding chunks: 4+2 by default, which survives two failed hosts at 1.5x raw, where "
                    "three replicas need 3x")


class HsmArchive(Model):
    """Lustre HSM: the coordinator on the MDS hands archive and restore requests to a copytool on the agent
    nodes, which moves file data to and from an S3 bucket (e.g. Ceph RGW)."""

    archive_id: int = Field(default=1, ge=1, le=32, description="HSM archive id the copytool serves")
    agents: list[Name] = Field(default_factory=list,
        description="nodes running the copytool (Lustre clients with a route to the endpoint): at least one")
    copytool: Literal["lemur"] = Field(default="lemur",
        description="copytool: Lemur (lhsmd with the lhsm-plugin-s3 data mover)")
    endpoint: Url = Field(description="S3 endpoint, e.g. https://192.0.2.10:7480 (Ceph RGW)")
    bucket: Bucket = Field(description="S3 bucket the archived files go to")
    region: Name = Field(default="default", description="S3 region (Ceph RGW: its zonegroup, `default`)")
    credentials: CredentialsRef = Field(description="where the copytool reads its keys: {file: PATH} or {env: NAME}")
    raw_tb: FiniteFloat | None = Field(default=None, gt=0,
        description="raw capacity of the object store, TB (sizing only; unknown when absent)")
    read_gbps: FiniteFloat | None = Field(default=None, gt=0,
        description="read bandwidth the object store delivers, GB/s (quoted or measured; when absent the "
                    "report uses the agents' links)")
    erasure: ErasureCode = Field(default_factory=ErasureCode, description="data protection of the object store")

    @field_validator("endpoint")
    @classmethod
    def _no_signed_url(cls, value: str) -> str:
        if re.search(r"(?i)(?:signature|credential|access_?key|secret|token)[A-Za-z_]*=", value) or looks_like_secret(
                value.split("://", 1)[-1].split("/", 1)[0]):
            raise ValueError("the endpoint carries what looks like a credential: give the bare endpoint and "
                             "reference the keys in `credentials`")
        return value

    @field_validator("bucket", "region")
    @classmethod
    def _not_a_key(cls, value: str) -> str:
        if looks_like_access_key(value):  # (a long mixed name such as archive2024backup stays a name)
            raise ValueError("looks like an access key id, not a name: the inventory holds no secrets "
                             "(reference the keys in `credentials`)")
        return value


# --- sizing settings ------------------------------------------------------------------------------
class DeviceRates(Model):
    """Sequential read bandwidth of one device of each kind, GB/s: what `plan storage` multiplies out."""

    nvme: FiniteFloat = Field(default=7.0, gt=0,
        description="an NVMe drive: 7 GB/s, the design brief's local NVMe (a PCIe 4.0 x4 drive's class)")
    optane_pmem: FiniteFloat = Field(default=6.8, gt=0,
        description="an Optane persistent memory module: 6.8 GB/s, Intel's read figure for a 256 GB PMem 100 module")
    ssd: FiniteFloat = Field(default=1.0, gt=0,
        description="a SAS/SATA SSD: 1 GB/s, under a 12 Gb/s SAS lane's ~1.2 GB/s of payload")
    hdd: FiniteFloat = Field(default=0.25, gt=0,
        description="a 7,200 rpm disk: 0.25 GB/s on its outer tracks, sequential")

    def of(self, kind: str) -> float:
        return float(getattr(self, kind.replace("-", "_")))


class StorageSizing(Model):
    """What `plan storage` weighs the tiers with. Every figure is a default with its reason; set the ones
    you have measured."""

    read_gbps_per_gpu: FiniteFloat = Field(default=0.875, gt=0,
        description="read demand of one GPU, GB/s: 0.875 = the design brief's 7 GB/s local NVMe that kept an "
                    "8-GPU node fed (ResNet epoch 18 min, against 25 min at 4 GB/s), over 8 GPUs")
    profiles: dict[Name, FiniteFloat] = Field(default_factory=dict,
        description="read demand per GPU by hardware profile, GB/s (overrides read_gbps_per_gpu for its nodes)")
    device_read_gbps: DeviceRates = Field(default_factory=DeviceRates,
        description="sequential read bandwidth of one device of each kind")
