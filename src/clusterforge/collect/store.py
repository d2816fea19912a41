"""Saved observations on disk: the raw text each tool printed, per host and for the fabric.

Layout (what `collect` writes and `validate --from DIR` reads):

    DIR/fabric/ibnetdiscover.txt        from the subnet-manager node
    DIR/fabric/iblinkinfo.txt           optional
    DIR/hosts/<host>/<tool>.txt         ibstat, nvidia-smi-topo, nvidia-smi-nvlink,
                                        nvidia-smi-query-gpu, lctl-list-nids
    DIR/hosts/<host>/ibstat@<hca>.txt   one CA view per file (the lab: ibsim shows every
                                        HCA as `ibsim0`; the file name says which it is)
    DIR/hosts/<host>/UNREACHABLE        why the host could not be reached

What is missing from DIR is reported by validate.coverage (FAB-NO-DATA, HOST-NO-DATA,
HOST-UNKNOWN), never passed over. Every file is read through `read_output` (capped).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

DEFAULT_MAX_MB = 64
"""The largest saved output read, in MB (ibnetdiscover of a 2,048-node fabric is ~5 MB)."""


class OutputTooLarge(ValueError):
    """A saved output (or stdin) is larger than the cap: refused before it is read whole."""


def read_output(source: Path | BinaryIO, max_mb: int = DEFAULT_MAX_MB) -> str:
    """Text of a saved tool output, read up to `max_mb` MB + 1 byte (an endless `/dev/zero` stops there).

    Bytes that are not UTF-8 become U+FFFD: tools print what the hardware reports, and the parser
    says which line does not fit. Raises OutputTooLarge past the cap, OSError when unreadable.
    """
    cap = max_mb * 1024 * 1024
    if isinstance(source, Path):
        with source.open("rb") as fh:
            data = fh.read(cap + 1)
    else:
        data = source.read(cap + 1)
    if len(data) > cap:
        raise OutputTooLarge(f"input is larger than {max_mb} MB")
    return data.decode("utf-8", errors="replace")


@dataclass
class Observations:
    fabric: dict[str, str] = field(default_factory=dict)  # tool -> text
    hosts: dict[str, dict[str, str]] = field(default_factory=dict)  # host -> file stem -> text
    unreachable: dict[str, str] = field(default_factory=dict)  # host -> reason
    root: Path | None = None

    def path_of(self, host: str | None, stem: str) -> str:
        base = self.root or Path(".")
        if host is None:
            return str(base / "fabric" / f"{stem}.txt")
        return str(base / "hosts" / host / f"{stem}.txt")


def load_dir(root: Path) -> Observations:
    """Read a saved layout (raises OSError / OutputTooLarge naming the file that cannot be read)."""
    obs = Observations(root=root)
    fabric = root / "fabric"
    if fabric.is_dir():
        for f in sorted(fabric.glob("*.txt")):
            obs.fabric[f.stem] = read_output(f)
    hosts = root / "hosts"
    if hosts.is_dir():
        for hdir in sorted(p for p in hosts.iterdir() if p.is_dir()):
            marker = hdir / "UNREACHABLE"
            if marker.exists():
                obs.unreachable[hdir.name] = read_output(marker).strip()
                continue
            obs.hosts[hdir.name] = {f.stem: read_output(f) for f in sorted(hdir.glob("*.txt"))}
    return obs


def save_dir(root: Path, obs: Observations) -> None:
    from ..fsutil import write_atomic  # reading (validate --from's fast path) needs none of fsutil

    for tool, text in obs.fabric.items():
        write_atomic(root / "fabric" / f"{tool}.txt", text)
    for host, tools in obs.hosts.items():
        for stem, text in tools.items():
            write_atomic(root / "hosts" / host / f"{stem}.txt", text)
    for host, reason in obs.unreachable.items():
        write_atomic(root / "hosts" / host / "UNREACHABLE", reason + "\n")
