"""The operating system a host is declared to run, and whether it runs it: /etc/os-release against the
catalog's release (catalog/os.yaml), read by the one probe before any change.

A host whose os-release is not the declared release is refused before anything on it changes (both engines:
the runner here, Ansible's roles/cf_os with the same rule); the other hosts go on. The rule: os-release's
`ID` is the release's `os_release_id`, and its `VERSION_ID` is the release's `version_id` or a point release of
it (`9.4` is a `9`; `22.04` is only `22.04`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog import catalog

OS_RELEASE_SCRIPT = (
    "(ID= VERSION_ID= PRETTY_NAME=; "
    "if [ -r /etc/os-release ]; then . /etc/os-release; "
    "elif [ -r /usr/lib/os-release ]; then . /usr/lib/os-release; fi; "
    "printf '%s\\n%s\\n%s\\n' \"$ID\" \"$VERSION_ID\" \"$PRETTY_NAME\")")
"""os-release(5) is meant to be sourced by a shell: in a subshell of the probe, its three fields on three lines
(empty ones where the file is missing). The same script is roles/cf_os's."""


@dataclass(frozen=True)
class OsTarget:
    """A declared release as the deploy needs it (the catalog's entry, by key)."""

    release: str
    """The inventory's key: `rocky9`."""
    name: str
    family: str
    package_manager: str
    os_release_id: str
    version_id: str


@dataclass(frozen=True)
class OsFound:
    """What a host's /etc/os-release says (all empty: no os-release)."""

    id: str = ""
    version_id: str = ""
    pretty_name: str = ""

    def __str__(self) -> str:
        if not self.id:
            return "nothing (no readable /etc/os-release)"
        pretty = f" ({self.pretty_name})" if self.pretty_name else ""
        return f"ID={self.id} VERSION_ID={self.version_id or '(none)'}{pretty}"


def os_target(release: str) -> OsTarget:
    """The catalog's release `release` (the checked inventory names only known ones: INV-OS)."""
    cat = catalog().os
    rel = cat.releases[release]
    return OsTarget(release, rel.name, rel.family, cat.families[rel.family].package_manager, rel.os_release_id,
                    rel.version_id)


def parse_found(lines: list[str]) -> OsFound:
    """Pure: OS_RELEASE_SCRIPT's three lines (fewer where the probe's output was cut) -> OsFound."""
    values = [line.strip() for line in lines[:3]] + [""] * (3 - min(3, len(lines)))
    return OsFound(*values[:3])


def matches(target: OsTarget, found: OsFound) -> bool:
    if found.id != target.os_release_id:
        return False
    return found.version_id == target.version_id or found.version_id.startswith(target.version_id + ".")


def mismatch(target: OsTarget, found: OsFound) -> str | None:
    """The refusal's message when the host is not the declared OS, else None."""
    if matches(target, found):
        return None
    return (f"os: the inventory declares {target.release} ({target.name}: ID={target.os_release_id} "
            f"VERSION_ID={target.version_id}), /etc/os-release says {found}: nothing on this host was changed")
