"""The two package managers a node's family installs with (catalog/os.yaml `families[].package_manager`):
apt (Debian, Ubuntu) and dnf (EL9). Each says, as shell text built from quoted names only:

- how the probe reads what is installed and what is held (dpkg's status; rpm's database and the versionlock
  plugin's list), and how that output is read back (pure);
- how a pin is asked for (`name=version`; `name-version`), installed (one transaction, downgrades allowed),
  held (`apt-mark hold`; `dnf versionlock add`) and released;
- how the package lists are refreshed (`apt-get update`; `dnf makecache`), and how a dnf module stream is
  enabled first (`dnf module enable nvidia-driver:550-open`).

A pin's version is the inventory's, as the deb form (`550.90.07-1`, `2.21.5-1+cuda12.4`): on dnf it is the
package's VERSION-RELEASE, matched exactly or before a dist tag (`550.90.07-1` is `550.90.07-1.el9`'s), and
asked for as `name-VERSION-RELEASE`, which dnf matches exactly: a repository whose packages carry a dist tag
needs it in the pin (docs/os.md).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

APT_ENV = "DEBIAN_FRONTEND=noninteractive"
APT_INSTALL = ("apt-get -q -y -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "
               "--allow-downgrades --allow-change-held-packages install")
DNF = "dnf -q -y"
VERSIONLOCK_LIST = "/etc/dnf/plugins/versionlock.list"
"""Where dnf's versionlock plugin keeps its locks (python3-dnf-plugin-versionlock; `dnf versionlock list`)."""


@dataclass(frozen=True)
class Installed:
    version: str
    held: bool


def _q(names: Iterable[str]) -> str:
    return " ".join(shlex.quote(n) for n in names)


@dataclass(frozen=True)
class PackageManager:
    name: str
    """apt | dnf"""

    # --- reading the host ---------------------------------------------------------------------------
    def probe(self, packages: Sequence[str], mark: str) -> str:
        """The probe's section(s) for these packages: `<mark>pkg` then one `name<TAB>version<TAB>status` line
        per installed package (status: `ii `, `hi ` when held), the same form for both managers."""
        if not packages:
            return ""
        if self.name == "apt":
            fmt = shlex.quote("${Package}\t${Version}\t${db:Status-Abbrev}\n")
            return f"echo '{mark}dpkg'; dpkg-query -W -f={fmt} {_q(packages)} 2>/dev/null || true"
        # rpm prints "package X is not installed" for the missing ones (on stdout): only our format's lines
        # carry a tab. The held ones: the versionlock plugin's list, read as a file (no dnf start-up per host)
        fmt = shlex.quote("%{NAME}\t%{VERSION}-%{RELEASE}\tii \n")
        return (f"echo '{mark}rpm'; rpm -q --qf {fmt} {_q(packages)} 2>/dev/null | grep '\t' || true; "
                f"echo '{mark}versionlock'; cat {VERSIONLOCK_LIST} 2>/dev/null || true")

    # --- changing it -----------------------------------------------------------------------------------
    def spec(self, package: str, version: str) -> str:
        return f"{package}={version}" if self.name == "apt" else f"{package}-{version}"

    def install(self, packages: Sequence[tuple[str, str | None]]) -> str:
        """One transaction installing, upgrading or downgrading each (name, pinned version or None) (held ones
        included)."""
        specs = [n if v is None else self.spec(n, v) for n, v in packages]
        if self.name == "apt":
            return f"{APT_ENV} {APT_INSTALL} {_q(specs)}"
        # a locked package moves only once its lock is gone (versionlock hides every other version): the pinned
        # names' locks are dropped first (`hold` adds the new ones right after), then one transaction
        pinned = [n for n, v in packages if v is not None]
        unlock = f"{{ dnf versionlock delete {_q(pinned)} >/dev/null 2>&1 || true; }} && " if pinned else ""
        return f"{unlock}{DNF} install {_q(specs)}"

    def hold(self, packages: Sequence[str], versions: Sequence[str] = ()) -> str:
        if self.name == "apt":
            return f"apt-mark hold {_q(packages)}"
        specs = [self.spec(p, v) for p, v in zip(packages, versions, strict=True)] if versions else list(packages)
        return f"dnf versionlock add {_q(specs)}"

    def unhold(self, packages: Sequence[str]) -> str:
        return f"apt-mark unhold {_q(packages)}" if self.name == "apt" else f"dnf versionlock delete {_q(packages)}"

    @property
    def refresh(self) -> str:
        return f"{APT_ENV} apt-get -q update" if self.name == "apt" else f"{DNF} makecache"

    def available(self, package: str) -> str:
        """A read-only script printing `installed`, else the version the repositories offer (empty or `(none)`
        when none does)."""
        q = shlex.quote(package)
        if self.name == "apt":
            return (f"if dpkg-query -W -f='${{Status}}' {q} 2>/dev/null | grep -q 'install ok installed'; "
                    f"then echo installed; else apt-cache policy {q} 2>/dev/null | sed -n 's/^ *Candidate: //p'; fi")
        return (f"if rpm -q {q} >/dev/null 2>&1; then echo installed; else "
                f"dnf -q repoquery --qf '%{{version}}-%{{release}}' {q} 2>/dev/null | tail -n 1; fi")

    def enable_module(self, streams: Sequence[str]) -> str:
        """dnf only: enable a module stream (idempotent) before its packages are installed."""
        return f"{DNF} module enable {_q(streams)}"

    def matches(self, want: str, have: str | None) -> bool:
        """Is the installed version `have` the pinned `want`?"""
        if have is None:
            return False
        if self.name == "apt":
            return have == want
        return have == want or have.startswith(want + ".")  # before a dist tag: 1 is 1.el9's, never 10's


APT = PackageManager("apt")
DNF_MANAGER = PackageManager("dnf")
MANAGERS = {"apt": APT, "dnf": DNF_MANAGER}


def manager(name: str) -> PackageManager:
    try:
        return MANAGERS[name]
    except KeyError:
        raise ValueError(f"unknown package manager {name!r}: one of {', '.join(MANAGERS)}") from None


def parse_versionlock(lines: Iterable[str]) -> set[str]:
    """Pure: the names the versionlock plugin's list holds. An entry is `[!]NAME-[EPOCH:]VERSION-RELEASE.*`
    (what `dnf versionlock add` writes); `!` entries exclude, they hold nothing; comments and blanks skipped."""
    held: set[str] = set()
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        nevra = line.removesuffix(".*")
        parts = nevra.rsplit("-", 2)
        if len(parts) == 3 and parts[0]:
            held.add(parts[0])
    return held
