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
    host: str = ""
    """The node the file is installed on (`gpu01`); '' when no one node owns it: a fabric-wide file, or one every
    node of a kind gets (then `dest` says where it goes on each)."""
    dest: str = ""
    """Where it goes on a host, an absolute path (`/etc/nccl.conf`); '' for a file no host installs."""
    families: tuple[str, ...] = ()
    """The OS families (catalog/os.yaml) whose hosts get it, for a file that differs by family (node_exporter's
    settings); () for every family."""

    @property
    def installed(self) -> bool:
        return bool(self.dest)

    @property
    def kind(self) -> str:
        """The template without `.j2`: how the summary counts files."""
        return self.template.removesuffix(".j2")


def on_host(root: str, host: str, dest: str, template: str, context: Mapping[str, Any], **kw: Any) -> FileSpec:
    """A file installed on `host` at `dest` (absolute), rendered under `<root>/<host><dest>`."""
    return FileSpec(f"{root}/{host}{dest}", template, context, host=host, dest=dest, **kw)


def host_file(node: str, dest: str, template: str, context: Mapping[str, Any], **kw: Any) -> FileSpec:
    """A node's own file: rendered at `hosts/<node><dest>`, installed on `node` at `dest`."""
    return on_host("hosts", node, dest, template, context, **kw)
