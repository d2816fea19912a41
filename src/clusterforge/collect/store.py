"""Saved observations on disk: the raw text each tool printed, per host and for the fabric.

Layout (what `collect` writes and `validate --from DIR` reads):

    DIR/fabric/ibnetdiscover.txt        from the subnet-manager node
    DIR/fabric/iblinkinfo.txt           optional
    DIR/fabric/dump_fts.txt             optional: the SM's forwarding tables (also accept --routes)
    DIR/hosts/<host>/<tool>.txt         ibstat, nvidia-smi-topo, nvidia-smi-nvlink,
                                        nvidia-smi-query-gpu, lctl-list-nids
    DIR/hosts/<host>/ibstat@<hca>.txt   one CA view per file (the lab: ibsim shows every
                                        HCA as `ibsim0`; the file name says which it is)
    DIR/hosts/<host>/UNREACHABLE        why the host could not be reached

What is missing from DIR is reported by validate.coverage (FAB-NO-DATA, HOST-NO-DATA,
HOST-UNKNOWN), never passed over. Every file is read through `read_output` (capped), but the forwarding
tables (fabric/dump_fts*.txt), which are read as a stream when used (`read_lines`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ..util.echo import one_line

DEFAULT_MAX_MB = 64
"""The largest saved output read, in MB (ibnetdiscover of a 2,048-node fabric is ~5 MB)."""


class OutputTooLarge(ValueError):
    """A saved output (or stdin) is larger than the cap: refused before it is read whole. `filename`: the file,
    when it was one."""

    filename: str | None = None


class CaptureRefused(OSError):
    """An entry of a capture directory that is not read: not a regular file (a FIFO would block the read
    forever), or a symbolic link that leaves the directory (its text would be quoted in a parse error)."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(0, why, str(path))


def read_output(source: Path | BinaryIO, max_mb: int = DEFAULT_MAX_MB) -> str:
    """Text of a saved tool output, read up to `max_mb` MB + 1 byte (an endless stream stops there).

    A path is read only when it is a regular file: it is opened without blocking and fstat'd, so a FIFO (which
    would block the read forever), a device or a directory is CaptureRefused (an OSError naming it) before a
    byte is read. Bytes that are not UTF-8 become U+FFFD: tools print what the hardware reports, and the parser
    says which line does not fit. Raises OutputTooLarge past the cap (`filename` set for a path), OSError when
    unreadable.
    """
    if isinstance(source, Path):
        return _read_regular(source, max_mb)
    return _capped(source, max_mb)


STREAM_MAX_MB = 32 * 1024
"""The most a streamed output is read to (`read_lines`): the SM's forwarding tables of a 2,048-node fabric are
2.1 GB, a line per switch and LID; the cap stops an endless stream."""


def read_lines(path: Path, max_mb: int = STREAM_MAX_MB) -> Iterator[str]:
    """The lines of a saved output as they are read, for one too large to hold as text (the forwarding tables):
    opened as `read_output` opens a path (a FIFO, device or directory is CaptureRefused before a byte is read),
    bytes that are not UTF-8 read as U+FFFD, each line without its end; OutputTooLarge past the cap."""
    return _lines(_open_regular(path), path, max_mb * 1024 * 1024)


def _lines(fd: int, path: Path, cap: int) -> Iterator[str]:
    seen = 0
    with os.fdopen(fd, "rb") as fh:
        for raw in fh:
            seen += len(raw)
            if seen > cap:
                exc = OutputTooLarge(f"input is larger than {cap // 1024 // 1024} MB")
                exc.filename = str(path)
                raise exc
            yield raw.decode("utf-8", errors="replace").rstrip("\r\n")


def _capped(fh: BinaryIO, max_mb: int) -> str:
    cap = max_mb * 1024 * 1024
    data = fh.read(cap + 1)
    if len(data) > cap:
        raise OutputTooLarge(f"input is larger than {max_mb} MB")
    return data.decode("utf-8", errors="replace")


def _open_regular(path: Path) -> int:
    """A descriptor of `path`, opened without blocking and fstat'd: CaptureRefused for a FIFO, device or
    directory (before a byte is read) or what cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise CaptureRefused(path, exc.strerror or str(exc)) from None
    try:  # before fdopen, which refuses a directory's descriptor with an error naming the descriptor ("3")
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        os.close(fd)
        raise
    if not regular:
        os.close(fd)
        raise CaptureRefused(path, "not a regular file (a FIFO, device or directory): refused, not read")
    return fd


def _read_regular(path: Path, max_mb: int) -> str:
    fd = _open_regular(path)
    with os.fdopen(fd, "rb") as fh:
        try:
            return _capped(fh, max_mb)
        except OutputTooLarge as exc:
            exc.filename = str(path)
            raise


def _inside(path: Path, root: Path) -> Path:
    """`path` (an entry of the capture directory `root`, resolved) when it, or what its links lead to, is inside
    `root`; else CaptureRefused (a link loop: OSError naming it)."""
    try:
        target = path.resolve(strict=True)
    except RuntimeError:  # a link loop, on Pythons that do not raise OSError for it
        raise CaptureRefused(path, "a symbolic link loop") from None
    except OSError as exc:
        raise CaptureRefused(path, exc.strerror or str(exc)) from None
    if target != root and not target.is_relative_to(root):
        raise CaptureRefused(path, "a symbolic link that leaves the capture directory: refused, not read")
    return target


def read_capture(path: Path, root: Path) -> str:
    """A capture file of the directory `root` (resolved): a regular file inside it (links within it are
    followed), read through `read_output` (opened without blocking: a FIFO planted after the check is refused
    too). CaptureRefused for a link that leaves `root` (its text would be quoted in a finding) or a loop."""
    _inside(path, root)
    return read_output(path)



def _entries(directory: Path, root: Path, pattern: str) -> list[Path]:
    """The entries of a capture directory matching `pattern`, sorted; each checked to stay inside `root`."""
    found = sorted(directory.glob(pattern))
    for p in found:
        _inside(p, root)
    return found


STREAMED = "dump_fts"
"""The fabric captures `load_dir` leaves on disk, to be read as a stream (`Observations.streams`): the SM's
forwarding tables, a line per switch and LID (2.1 GB for a 2,048-node fabric; per plane `dump_fts-plane<P>`)."""


@dataclass
class Observations:
    fabric: dict[str, str] = field(default_factory=dict)  # tool -> text
    streams: dict[str, Path] = field(default_factory=dict)
    """Fabric captures too large to hold as text (STREAMED): the stem -> its file, inside the directory."""
    hosts: dict[str, dict[str, str]] = field(default_factory=dict)  # host -> file stem -> text
    unreachable: dict[str, str] = field(default_factory=dict)  # host -> reason
    root: Path | None = None

    def path_of(self, host: str | None, stem: str) -> str:
        """The saved file of `stem`, as a message names it: on one line (echo.one_line), whatever DIR is named."""
        base = self.root or Path(".")
        if host is None:
            return one_line(str(base / "fabric" / f"{stem}.txt"))
        return one_line(str(base / "hosts" / host / f"{stem}.txt"))


def load_dir(root: Path) -> Observations:
    """Read a saved layout (raises OSError / OutputTooLarge naming the file that cannot be read: CaptureRefused
    for a FIFO or other non-file, or a link out of `root`)."""
    obs = Observations(root=root)
    real = root.resolve()
    fabric = root / "fabric"
    if fabric.is_dir() or fabric.is_symlink():
        _inside(fabric, real)
        for f in _entries(fabric, real, "*.txt"):
            if f.stem == STREAMED or f.stem.startswith(f"{STREAMED}-plane"):
                obs.streams[f.stem] = _inside(f, real)  # read_lines refuses a FIFO or non-file when read
            else:
                obs.fabric[f.stem] = read_capture(f, real)
    hosts = root / "hosts"
    if hosts.is_dir() or hosts.is_symlink():
        _inside(hosts, real)
        for hdir in _entries(hosts, real, "*"):
            if not hdir.is_dir():
                continue
            marker = hdir / "UNREACHABLE"
            if marker.exists() or marker.is_symlink():
                obs.unreachable[hdir.name] = read_capture(marker, real).strip()
                continue
            obs.hosts[hdir.name] = {f.stem: read_capture(f, real) for f in _entries(hdir, real, "*.txt")}
    return obs


def save_dir(root: Path, obs: Observations) -> None:
    from ..util.fsutil import write_atomic  # reading (validate --from's fast path) needs none of fsutil

    for tool, text in obs.fabric.items():
        write_atomic(root / "fabric" / f"{tool}.txt", text)
    for host, tools in obs.hosts.items():
        for stem, text in tools.items():
            write_atomic(root / "hosts" / host / f"{stem}.txt", text)
    for host, reason in obs.unreachable.items():
        write_atomic(root / "hosts" / host / "UNREACHABLE", reason + "\n")
