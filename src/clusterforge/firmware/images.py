"""Where a pin's firmware image is staged on a host, and how firmware versions compare. Pure."""

from __future__ import annotations

from pathlib import PurePosixPath

DEFAULT_IMAGE_DIR = "/var/lib/clusterforge/firmware"  # where `firmware flash` expects the image on each host


def version_key(version: str) -> tuple[int, ...]:
    """`20.39.2048` -> (20, 39, 2048): firmware versions compare number by number (FwVersion's pattern)."""
    return tuple(int(p) for p in version.split("."))


def staged_path(image: str, image_dir: str = DEFAULT_IMAGE_DIR) -> str:
    """Where the pin's image must be staged on a host: its file name under `image_dir` (a URL or a controller
    path names the file; nothing copies it there)."""
    name = PurePosixPath(image.split("?", 1)[0].rstrip("/")).name
    return str(PurePosixPath(image_dir) / name)
