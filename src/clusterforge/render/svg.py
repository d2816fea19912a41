"""Dot source to SVG through Graphviz's `dot` (the only step of a render that runs a program)."""

from __future__ import annotations

import shutil
import subprocess

DOT_TIMEOUT_S = 120


class DotError(RuntimeError):
    """`dot` exists but failed on the source."""


def dot_available() -> bool:
    return shutil.which("dot") is not None


def dot_to_svg(source: str) -> str | None:
    """The SVG drawing of `source`, or None when Graphviz's `dot` is not installed."""
    exe = shutil.which("dot")
    if exe is None:
        return None
    try:
        done = subprocess.run(
            [exe, "-Tsvg"], input=source, capture_output=True, text=True, timeout=DOT_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise DotError(f"dot took longer than {DOT_TIMEOUT_S} s") from exc
    if done.returncode != 0:
        raise DotError(f"dot failed ({done.returncode}): {done.stderr.strip()[:500]}")
    return done.stdout
