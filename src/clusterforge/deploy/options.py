"""Run-time settings of a deploy that are not part of the inventory (engine, limits, secrets)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..util.echo import one_line

if TYPE_CHECKING:
    from ..model.inventory import Inventory

REPO_AUTH_ENV = "CLUSTERFORGE_REPO_AUTH_FILE"
"""Path of an apt auth.conf(5) file with the repository credentials (never read from the inventory)."""


@dataclass(frozen=True)
class Mirror:
    url: str
    suite: str = "stable"
    components: tuple[str, ...] = ("main",)
    options: str = ""
    """apt source options, e.g. `signed-by=/etc/apt/keyrings/nvidia.gpg` (`trusted=yes` only for the lab)."""

    @staticmethod
    def parse(text: str, options: str = "") -> Mirror:
        """`URL [SUITE [COMPONENT...]]` (the inventory's `deploy.package_mirror`)."""
        parts = text.split()
        if not parts:
            raise ValueError("empty package mirror")
        suite = parts[1] if len(parts) > 1 else "stable"
        comps = tuple(parts[2:]) or ("main",)
        return Mirror(parts[0], suite, comps, options)

    @staticmethod
    def of_inventory(inv: Inventory) -> Mirror | None:
        """The inventory's `deploy.package_mirror`, or None."""
        text = inv.deploy.package_mirror
        return Mirror.parse(text) if text else None


@dataclass(frozen=True)
class DnfRepo:
    """A dnf repository (a `.repo` file's section): its baseurl, and how its packages' signatures are checked."""

    url: str
    gpgkey: str = ""
    gpgcheck: bool = True
    """False only where the packages are unsigned on purpose (the lab's stand-ins)."""

    @staticmethod
    def parse(text: str) -> DnfRepo:
        """`URL [gpgkey=URL] [gpgcheck=0|1]` (the inventory's `deploy.package_mirrors.el9`)."""
        parts = text.split()
        if not parts:
            raise ValueError("empty dnf repository")
        opts = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        return DnfRepo(parts[0], opts.get("gpgkey", ""), opts.get("gpgcheck", "1") != "0")


Source = Mirror | DnfRepo
"""Where one OS family's packages come from: an apt source, or a dnf repository."""


@dataclass(frozen=True)
class Sources:
    """A stage's package sources for a run: its apt source (every apt family's), and a family's own where it
    has one (the lab's dnf repository for EL-shaped hosts)."""

    apt: Mirror | None = None
    families: Mapping[str, Source] = field(default_factory=dict)


def mirrors_of_inventory(inv: Inventory) -> dict[str, Source]:
    """The inventory's package sources of the families other than Debian's (`deploy.package_mirror`, the
    options' `repo`)."""
    out: dict[str, Source] = {}
    pm = inv.deploy.package_mirrors
    if pm.ubuntu:
        out["ubuntu"] = Mirror.parse(pm.ubuntu)
    if pm.el9:
        out["el9"] = DnfRepo.parse(pm.el9)
    return out


@dataclass(frozen=True)
class DeployOptions:
    env_name: str
    repo: Mirror | None = None
    repo_auth: str | None = None
    """Contents of the apt auth file: a secret, shipped with mode 0600 and never printed."""
    root: str = "/"
    """Prefix of every managed path (benchmarks against hosts that share one file system)."""
    components: tuple[str, ...] | None = None
    mirrors: Mapping[str, Source] = field(default_factory=dict)
    """Per OS family (debian, ubuntu, el9), its own package source where it has one (else `repo` for the apt
    families, none for dnf)."""

    def source_for(self, family: str, package_manager: str) -> Source | None:
        """The package source of `family`'s hosts: its own, else `repo` where the family speaks apt."""
        own = self.mirrors.get(family)
        if own is not None:
            return own
        return self.repo if package_manager == "apt" else None

    def __post_init__(self) -> None:
        # the environment's directory name goes into every managed file (banner, comments): one line
        object.__setattr__(self, "env_name", one_line(self.env_name))

    def __repr__(self) -> str:  # keep the secret out of logs and tracebacks
        auth = "<redacted>" if self.repo_auth else None
        return (f"DeployOptions(env_name={self.env_name!r}, repo={self.repo!r}, repo_auth={auth}, "
                f"root={self.root!r}, components={self.components!r}, mirrors={dict(self.mirrors)!r})")


def read_repo_auth(environ: dict[str, str] | None = None) -> str | None:
    """The credentials file named by $CLUSTERFORGE_REPO_AUTH_FILE, or None."""
    env = os.environ if environ is None else environ
    path = env.get(REPO_AUTH_ENV)
    if not path:
        return None
    return Path(path).read_text(encoding="utf-8")
