"""What a context builder hands to the renderer: one file to write, from one template."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FileSpec:
    path: str
    """Where the file goes, relative to the output directory (`hosts/gpu01/etc/nccl.conf`)."""
    template: str
    """Template under templates/, e.g. `nccl/nccl.conf.j2`."""
    context: Mapping[str, Any]
    """Plain variables for the template (dicts, lists, str, int, bool)."""
    placeholders: tuple[str, ...] = ()
    """Devices whose placeholder GUIDs the file names (`leaf01`, `gpu01/mlx5_0/1`)."""
    notes: tuple[str, ...] = ()
    """Anything the reader of the render summary should know about this file."""

    @property
    def kind(self) -> str:
        """The template without `.j2`: how the summary counts files."""
        return self.template.removesuffix(".j2")
