"""Files on disk: atomic writes, our temporaries and their cleanup, and a lock per directory.

* `write_atomic`: a reader never sees a half-written file. The data goes to a temporary
  `.<name>.<random>.cf-tmp` beside the target, then replaces it; the temporary is removed on any
  exception, including the SystemExit that `terminate_cleanly` turns SIGTERM/SIGHUP into.
  A SIGKILL still leaves one: `remove_temporaries` removes ours on the next run.
* `directory_lock`: one writer at a time per directory (`fcntl.flock` on `.clusterforge.lock`
  in it): a second `render`, `plan --write` or `learn` waits (bounded, saying for whom) or is
  refused, and never interleaves its files with the first one's.
* `new_directory_problem` / `fresh_directory`: a run's output directory (`accept --run DIR`,
  `lab accept --output DIR`) is a new or empty directory given as itself (not a symbolic link);
  a run that fails or is interrupted leaves it as it found it: nothing it wrote there, and the
  directory gone again when the run created it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

TEMP_SUFFIX = ".cf-tmp"
LOCK_FILE = ".clusterforge.lock"
LOCK_WAIT_ENV = "CLUSTERFORGE_LOCK_WAIT_S"
LOCK_WAIT_S = 120.0
"""How long a second run waits for the lock before it gives up (override: $CLUSTERFORGE_LOCK_WAIT_S)."""
_MKSTEMP_TAIL = re.compile(r"^[a-z0-9_]{8}$")


def write_atomic(path: Path, data: str | bytes, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def is_temporary(name: str, known: set[str] | frozenset[str] = frozenset()) -> bool:
    """True for a temporary of `write_atomic`: `.<name>.<random>.cf-tmp`, or the older
    `.<name>.<random>` form when `<name>` is one of `known` (files we wrote in that directory)."""
    if not name.startswith("."):
        return False
    if name.endswith(TEMP_SUFFIX) and len(name) > len(TEMP_SUFFIX) + 1:
        return True
    stem, _, tail = name[1:].rpartition(".")
    return stem in known and _MKSTEMP_TAIL.match(tail) is not None


def remove_temporaries(root: Path, known: dict[Path, set[str]] | None = None, *,
                       recursive: bool = True) -> list[Path]:
    """Remove our leftover temporaries under `root` (never following a symlink); return what went.
    `known`: directory -> names written there, for the older temporaries that carry no suffix.
    `recursive=False`: only those directly in `root` (a lock's directory, not its subdirectories)."""
    removed: list[Path] = []
    names = known or {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if recursive and not (here / d).is_symlink()]
        for name in filenames:
            path = here / name
            if is_temporary(name, names.get(here, set())) and not path.is_symlink() and path.is_file():
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed.append(path)
    return removed


def new_directory_problem(path: Path) -> str | None:
    """Why `path` cannot take a run's outputs, or None: it must be missing (its nearest existing parent a
    directory) or an empty directory, and not a symbolic link (what is written under it would land where the
    link leads, outside the path given). Reads only; writes nothing."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        parent = next((p for p in path.parents if os.path.lexists(p)), None)
        if parent is not None and not parent.is_dir():
            return f"{parent} is not a directory"
        return None
    except NotADirectoryError:
        parent = next((p for p in reversed(path.parents) if os.path.lexists(p) and not p.is_dir()), None)
        return f"{parent} is not a directory" if parent is not None else "a parent of it is not a directory"
    except OSError as exc:  # a loop among its parents, or no permission to look
        return f"cannot be used ({exc.strerror or exc})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link: give a new directory, as itself"
    if not stat.S_ISDIR(st.st_mode):
        return "exists and is not a directory: give a new one"
    try:
        with os.scandir(path) as entries:
            if next(entries, None) is not None:
                return "is not empty (an earlier run's outputs, or other files): give a new directory"
    except OSError as exc:
        return f"cannot be listed ({exc.strerror or exc})"
    return None


@contextlib.contextmanager
def fresh_directory(path: Path) -> Iterator[Path]:
    """`path` (new or empty: `new_directory_problem` said None) created and shown writable (a temporary made
    and removed in it: OSError when it cannot be, before any work), for the block to write a run's outputs
    in. When the block raises, anything included (an interrupt, SIGTERM under `terminate_cleanly`, a write
    that failed), what it wrote under `path` is removed and `path` itself, with the parents this created,
    when it was new: no partial run and no temporary is left, and the same command can run again."""
    problem = new_directory_problem(path)
    if problem is not None:  # never a directory holding what is not ours: a failure below would remove it
        raise OSError(errno.EEXIST, problem, str(path))
    created = [p for p in (path, *path.parents) if not os.path.lexists(p)]  # deepest first
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-test.", suffix=TEMP_SUFFIX, dir=path)
        os.close(fd)
        os.unlink(probe)
        yield path
    except BaseException:
        _empty(path)
        for p in created:
            with contextlib.suppress(OSError):
                p.rmdir()
        raise


def _empty(path: Path) -> None:
    """Remove what is under `path` (never following a symbolic link); `path` itself stays."""
    try:
        entries = list(os.scandir(path))
    except OSError:
        return
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)


class LockTimeout(Exception):
    """Another run held the directory's lock for longer than we wait."""


def lock_wait_s() -> float:
    text = os.environ.get(LOCK_WAIT_ENV, "")
    try:
        return max(0.0, float(text)) if text else LOCK_WAIT_S
    except ValueError:
        return LOCK_WAIT_S


@contextlib.contextmanager
def directory_lock(directory: Path, *, wait_s: float | None = None,
                   on_wait: Callable[[str], None] | None = None) -> Iterator[Path]:
    """Hold an exclusive lock on `directory` (created if missing) for the block.

    A held lock is waited for up to `wait_s` seconds (default `lock_wait_s()`), `on_wait` told once
    who holds it; LockTimeout after that. The lock file stays (empty of meaning once released)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LOCK_FILE
    if path.is_symlink():
        raise OSError(errno.ELOOP, f"{path} is a symlink; refusing to lock through it")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        limit = lock_wait_s() if wait_s is None else wait_s
        deadline = time.monotonic() + limit
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = _holder(fd)
                if time.monotonic() >= deadline:
                    raise LockTimeout(f"{directory} is in use by another clusterforge run ({holder}); "
                                      f"gave up after {limit:g} s") from None
                if not told and on_wait is not None:
                    on_wait(f"{directory} is in use by another clusterforge run ({holder}); "
                            f"waiting up to {limit:g} s")
                    told = True
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
        yield path
    finally:
        os.close(fd)  # releases the lock


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
    except OSError:
        text = ""
    return text or "pid unknown"


@contextlib.contextmanager
def terminate_cleanly() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise SystemExit (so `finally`/`except` clean up: temporaries
    removed, locks released) instead of killing the process outright. Main thread only; else a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _exit(signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = {sig: signal.signal(sig, _exit) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
