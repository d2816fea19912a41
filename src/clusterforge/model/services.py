"""Software pins, Lustre file systems and OpenSM settings."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .base import AbsPath, Model, MountOptions, Name
from .storage import HsmArchive, LustreTarget, PersistentClientCache, Striping

Version = Annotated[str, Field(pattern=r"^[0-9][0-9A-Za-z.+~:_-]*$")]
MgsNid = Annotated[str, Field(pattern=r"^([0-9.]+|[A-Za-z0-9][A-Za-z0-9._-]{0,62})@(o2ib|tcp)[0-9]*$")]


class SoftwarePins(Model):
    nvidia_driver: Version | None = Field(default=None, description="NVIDIA driver version")
    cuda: Version | None = Field(default=None, description="CUDA toolkit version")
    doca_ofed: Version | None = Field(default=None, description="DOCA-OFED (MLNX_OFED) version")
    nccl: Version | None = Field(default=None, description="NCCL version")
    nccl_tests: Version | None = Field(default=None, description="nccl-tests version")
    lustre_client: Version | None = Field(default=None, description="Lustre client version")
    dcgm_exporter: Version | None = Field(default=None, description="NVIDIA dcgm-exporter version (GPU nodes, "
                                          "monitoring)")
    telegraf: Version | None = Field(default=None, description="Telegraf version from the site's InfluxData "
                                     "repository (monitoring collector `telegraf`)")
    lemur: Version | None = Field(default=None, description="Lemur version (lemur-hsm-agent, lemur-data-movers: "
                                  "lhsmd and its S3 mover, the HSM archive's copytool) from the site's repository: "
                                  "built from whamcloud/lemur, in neither Debian nor PyPI")
    kernel: Version | None = Field(default=None, description="kernel version")


class LustreFs(Model):
    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,7}$")] = Field(
        description="Lustre file system name (fsname, up to 8 characters)")
    mgs_nids: list[MgsNid] = Field(
        min_length=1, description="ADDRESS@NET, or SERVER@NET (o2ib): a server of this file system, resolved to "
        "its address on the first of `interfaces`")
    mount: AbsPath = Field(description="mount point on the clients")
    lnet: Annotated[str, Field(pattern=r"^(o2ib|tcp)[0-9]*$")] = Field(default="o2ib0",
        description="LNet network of the clients")
    interfaces: list[Name] = Field(default_factory=lambda: ["ib0"],
        description="IPoIB interfaces LNet runs on (addressing.ipoib names)")
    servers: list[Name] = Field(default_factory=list, description="nodes serving this file system")
    failover_pairs: list[tuple[Name, Name]] = Field(
        default_factory=list,
        description="HA failover pairs among the servers ([lus01, lus02]): a pair's two servers take over "
        "each other's targets, so the planner puts them on different leaves, trunks and panels and a "
        "change plan never takes both out at once",
    )
    clients: Literal["compute", "all"] = Field(default="compute",
        description="nodes that mount it: compute nodes, or all nodes")
    options: MountOptions = Field(default="defaults,_netdev,flock", description="mount options")
    targets: list[LustreTarget] = Field(default_factory=list,
        description="the server side: MGT, MDTs and OSTs, each on its server's devices (docs/storage.md); empty "
                    "when the servers are managed elsewhere")
    striping: Striping = Field(default_factory=Striping, description="default striping of new files")
    pcc: PersistentClientCache | None = Field(default=None,
        description="the cache tier: Persistent Client Cache on the clients' local NVMe (docs/storage.md)")
    hsm: HsmArchive | None = Field(default=None,
        description="the archive tier: HSM copytool to an S3 object store (docs/storage.md)")

    def client(self, node: str, role: str) -> bool:
        """Whether `node` (of `role`) mounts this file system as a client: compute nodes, or every node with
        `clients: all`; never one of its own servers."""
        return (role == "compute" or self.clients == "all") and node not in self.servers

    def hsm_agent(self, node: str) -> bool:
        """Whether `node` runs this file system's HSM copytool (lhsmd)."""
        return self.hsm is not None and node in self.hsm.agents

    def runs_client(self, node: str, role: str) -> bool:
        """Whether `node` needs this file system's Lustre client (LNet, mount.lustre): its clients, and its HSM
        agents that do not serve it (lhsmd mounts the file system itself, under its own mount root)."""
        return self.client(node, role) or (self.hsm_agent(node) and node not in self.servers)

    def hsm_coordinators(self) -> set[str]:
        """The servers of this file system's metadata targets when it has an archive tier (the HSM coordinator
        runs on each MDT); empty without one."""
        return {t.server for t in self.targets if t.kind == "mdt"} if self.hsm is not None else set()


ROLE_OF_KIND = {"ost": "lustre-ost", "mdt": "lustre-mdt", "mgt": "lustre-mdt"}
"""The local-device role (`storage[].role`) each target kind is built on."""


def target_name(fs: LustreFs, t: LustreTarget) -> str:
    """`lfs01-OST0007`, `lfs01-MDT0000`, `lfs01-MGT`: the name Lustre gives the target."""
    return f"{fs.name}-MGT" if t.kind == "mgt" else f"{fs.name}-{t.kind.upper()}{t.index:04x}"


def partners(fs: LustreFs) -> dict[str, str]:
    """Server -> its failover partner (the first pair naming it; a second is a check error elsewhere)."""
    out: dict[str, str] = {}
    for a, b in fs.failover_pairs:
        if a != b:
            out.setdefault(a, b)
            out.setdefault(b, a)
    return out


def failover_of(fs: LustreFs, t: LustreTarget) -> str | None:
    """The server that takes `t` over: declared, else the server's partner, else none."""
    return t.failover if t.failover is not None else partners(fs).get(t.server)


class SmNode(Model):
    node: Name = Field(description="node running OpenSM")
    priority: int = Field(ge=0, le=15, description="SM priority; the master has the strictly highest")


class PartitionMember(Model):
    device: Name | Literal["ALL", "ALL_CAS", "ALL_SWITCHES", "SELF"] = Field(
        description="node or switch name, or ALL / ALL_CAS / ALL_SWITCHES / SELF")
    membership: Literal["full", "limited"] = Field(default="full", description="full or limited membership")


class Partition(Model):
    name: Name = Field(description="partition name in partitions.conf")
    pkey: int = Field(ge=1, le=0x7FFF, description="P_Key (15 bits)")
    ipoib: bool = Field(default=False, description="IPoIB runs on this partition")
    mtu: int | None = Field(default=None, ge=1, le=5, description="IB MTU code: 4 = 2048, 5 = 4096")
    members: list[PartitionMember] = Field(min_length=1, description="who is in the partition")


class OpenSm(Model):
    sm_nodes: list[SmNode] = Field(min_length=1, description="nodes running OpenSM, master and standbys")
    routing_engine: Literal["ftree", "updn", "minhop", "dor", "lash", "dfsssp", "ar_ftree"] = Field(default="ftree",
        description="OpenSM routing engine")
    partitions: list[Partition] = Field(default_factory=list, description="partitions besides the default one")
    node_name_map: bool = Field(default=True, description="render and use a node-name-map (GUID -> name)")
    sweep_interval_s: int = Field(default=10, ge=0, description="seconds between light sweeps (0: none)")
    lmc: int = Field(default=0, ge=0, le=7, description="LID mask control: 2^lmc LIDs per port")
