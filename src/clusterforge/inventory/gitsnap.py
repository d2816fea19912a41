"""An environment directory as it was at a git revision, materialized in a temporary directory.

For `clusterforge diff ENV --rev REV`: the old inventory is the one committed at REV.
Runs `git` with argument lists (never a shell); the files are read with `git show REV:PATH`.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class GitError(Exception):
    pass


def _git(cwd: Path, *args: str) -> bytes:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0]}: {exc}") from None
    if done.returncode != 0:
        raise GitError(done.stderr.decode(errors="replace").strip() or f"git {args[0]} failed")
    return done.stdout


@contextmanager
def env_at_revision(env: Path, rev: str) -> Iterator[Path]:
    """Yield a directory holding `env`'s files as committed at `rev` (same directory name)."""
    env = env.resolve()
    if rev.startswith("-"):
        raise GitError(f"{rev!r} is not a revision")
    top = Path(_git(env if env.is_dir() else env.parent, "rev-parse", "--show-toplevel").decode().strip())
    rel = env.relative_to(top).as_posix()
    names = _git(top, "ls-tree", "-r", "--name-only", "-z", rev, "--", rel).decode().split("\0")
    files = [n for n in names if n and n.endswith((".yaml", ".yml"))]
    if not files:
        raise GitError(f"{rel} has no inventory files at {rev}")
    with tempfile.TemporaryDirectory(prefix="cf-rev-") as tmp:
        out = Path(tmp) / env.name
        for name in files:
            dest = out / Path(name).relative_to(rel)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(_git(top, "show", f"{rev}:{name}"))
        yield out
