"""What a host has now: one read-only shell command, one pure parser.

`HostState` is a pyinfra fact: `command(...)` builds a POSIX sh script (one SSH round
trip per host) and `process(lines)` turns its output into `HostFacts`. The parser is pure
and tested with captured outputs under tests/unit/deploy/data/.
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field

from pyinfra.api.facts import FactBase

from .os_target import OS_RELEASE_SCRIPT, OsFound, parse_found
from .pkgmgr import manager, parse_versionlock

MARK = "@@cf "


@dataclass(frozen=True)
class FileFact:
    mode: int
    sha256: str
    content: bytes | None
    """None for secret files (only their checksum is read)."""


@dataclass(frozen=True)
class PackageFact:
    version: str
    status: str
    """dpkg's abbreviated status: `ii ` installed, `hi ` installed and held, `rc ` removed (on dnf hosts the same
    form: `ii ` from rpm's database, `hi ` where the versionlock list holds it)."""

    @property
    def installed(self) -> bool:
        return self.status[1:2] == "i"

    @property
    def held(self) -> bool:
        return self.status[:1] == "h"


@dataclass
class HostFacts:
    kernel: str = ""
    systemd: bool = False
    files: dict[str, FileFact | None] = field(default_factory=dict)
    packages: dict[str, PackageFact] = field(default_factory=dict)
    nvidia_loaded: str = ""
    """Version of the loaded nvidia kernel module (/sys/module/nvidia/version), '' when not loaded."""
    modules: set[str] = field(default_factory=set)
    processes: dict[str, list[int]] = field(default_factory=dict)
    services: dict[str, tuple[str, str]] = field(default_factory=dict)
    """unit -> (is-enabled, is-active), only where systemd runs."""
    ofed_info: str = ""
    binaries: set[str] = field(default_factory=set)
    os: OsFound | None = None
    """What /etc/os-release says (None: the probe's output had no such section)."""

    def package_version(self, name: str) -> str | None:
        pkg = self.packages.get(name)
        return pkg.version if pkg is not None and pkg.installed else None


def state_script(files: Iterable[str], secret_files: Iterable[str], packages: Iterable[str],
                 processes: Iterable[str], services: Iterable[str], modules: Iterable[str],
                 binaries: Iterable[str], package_manager: str = "apt") -> str:
    """The read-only probe: sections introduced by `@@cf <kind> <arg>` lines."""
    q = shlex.quote
    out = [
        f"echo '{MARK}kernel'; uname -r",
        f"echo '{MARK}systemd'; if [ -d /run/systemd/system ]; then echo yes; else echo no; fi",
        f"echo '{MARK}module'; cat /sys/module/nvidia/version 2>/dev/null || true",
        f"echo '{MARK}ofed'; ofed_info -s 2>/dev/null || true",
        f"echo '{MARK}os'; {OS_RELEASE_SCRIPT}",
    ]
    pkgs = sorted(set(packages))
    if pkgs:
        out.append(manager(package_manager).probe(pkgs, MARK))
    for path in files:
        out.append(f"printf '%s\\n' {q(MARK + 'file ' + path)}; if [ -f {q(path)} ]; then stat -c %a {q(path)}; "
                   f"sha256sum < {q(path)} | cut -d' ' -f1; base64 -w0 < {q(path)}; echo; else echo absent; fi")
    for path in secret_files:
        out.append(f"printf '%s\\n' {q(MARK + 'secret ' + path)}; if [ -f {q(path)} ]; then stat -c %a {q(path)}; "
                   f"sha256sum < {q(path)} | cut -d' ' -f1; else echo absent; fi")
    for name in modules:
        out.append(f"printf '%s\\n' {q(MARK + 'mod ' + name)}; "
                   f"[ -d /sys/module/{q(name.replace('-', '_'))} ] && echo loaded || true")
    for name in processes:
        out.append(f"printf '%s\\n' {q(MARK + 'proc ' + name)}; pgrep -x {q(name)} || true")
    for name in binaries:
        out.append(f"printf '%s\\n' {q(MARK + 'bin ' + name)}; command -v {q(name)} || true")
    units = sorted(set(services))
    if units:
        # printf, not echo: a unit name's escapes (`lustre-lfs\x2d01.mount`) are data, never echo's
        checks = "; ".join(f"printf '%s %s %s\\n' {q(u)} \"$(systemctl is-enabled {q(u)} 2>/dev/null || true)\" "
                           f"\"$(systemctl is-active {q(u)} 2>/dev/null || true)\"" for u in units)
        out.append(f"echo '{MARK}services'; if [ -d /run/systemd/system ]; then {checks}; fi")
    return "\n".join(out)


def parse_state(lines: Iterable[str]) -> HostFacts:
    """Pure: the probe's output lines -> HostFacts."""
    facts = HostFacts()
    section: list[str] = []
    head = ""

    def flush() -> None:
        if head:
            _apply(facts, head, section)

    for line in lines:
        if line.startswith(MARK):
            flush()
            head, section = line[len(MARK):], []
        else:
            section.append(line)
    flush()
    return facts


def _apply(facts: HostFacts, head: str, body: list[str]) -> None:
    kind, _, arg = head.partition(" ")
    text = [b for b in body if b.strip()]
    if kind == "kernel":
        facts.kernel = text[0].strip() if text else ""
    elif kind == "systemd":
        facts.systemd = bool(text) and text[0].strip() == "yes"
    elif kind == "module":
        facts.nvidia_loaded = text[0].strip() if text else ""
    elif kind == "ofed":
        facts.ofed_info = text[0].strip() if text else ""
    elif kind == "os":
        facts.os = parse_found(body)  # by position: an empty VERSION_ID is a line of its own
    elif kind == "versionlock":  # after `rpm`: the names the dnf locks hold are held
        for name in parse_versionlock(text):
            if name in facts.packages:
                facts.packages[name] = PackageFact(facts.packages[name].version, "hi ")
    elif kind in ("dpkg", "rpm"):
        for row in text:
            parts = row.split("\t")
            if len(parts) == 3 and parts[1]:
                facts.packages[parts[0]] = PackageFact(parts[1], parts[2])
    elif kind in ("file", "secret"):
        facts.files[arg] = _file_fact(text, secret=kind == "secret")
    elif kind == "mod":
        if text and text[0].strip() == "loaded":
            facts.modules.add(arg)
    elif kind == "proc":
        facts.processes[arg] = [int(t) for t in text if t.strip().isdigit()]
    elif kind == "bin":
        if text:
            facts.binaries.add(arg)
    elif kind == "services":
        for row in text:
            parts = row.split()
            if parts:
                facts.services[parts[0]] = (parts[1] if len(parts) > 1 else "", parts[2] if len(parts) > 2 else "")


def _file_fact(text: list[str], *, secret: bool) -> FileFact | None:
    if not text or text[0].strip() == "absent":
        return None
    mode = int(text[0].strip(), 8)
    sha = text[1].strip() if len(text) > 1 else ""
    if secret:
        return FileFact(mode, sha, None)
    raw = text[2].strip() if len(text) > 2 else ""
    return FileFact(mode, sha, base64.b64decode(raw) if raw else b"")


class HostState(FactBase[HostFacts]):
    """Everything the deploy needs to know about one host, in one command."""

    def command(self, files: tuple[str, ...] = (), secret_files: tuple[str, ...] = (),
                packages: tuple[str, ...] = (), processes: tuple[str, ...] = (),
                services: tuple[str, ...] = (), modules: tuple[str, ...] = (),
                binaries: tuple[str, ...] = (), package_manager: str = "apt") -> str:
        return state_script(files, secret_files, packages, processes, services, modules, binaries, package_manager)

    @staticmethod
    def default() -> HostFacts:
        return HostFacts()

    def process(self, output: list[str]) -> HostFacts:
        return parse_state(output)
