"""What the OS-family tests share: a node's release declared in a copy of an inventory (nodes.yaml's one-line
node entries gain `os: <release>`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def declare_os(env: Path, releases: Mapping[str, str]) -> None:
    """Give each named node of the inventory copy `env` its release (`{"gpu08": "rocky9"}`)."""
    nodes = env / "nodes.yaml"
    text = nodes.read_text()
    for name, release in releases.items():
        line = next(x for x in text.splitlines() if x.strip().startswith(f"- {{name: {name},"))
        text = text.replace(line, line.rstrip()[:-1] + f", os: {release}}}")
    nodes.write_text(text)
