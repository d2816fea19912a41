"""Render an environment's files from the model: one Jinja2 Environment, pure context builders.

    from clusterforge.render import render, render_environment, write_tree

    files = render_environment(index, "lab")           # {relative path: text}, pure
    result = render(index, "lab", svg=True)            # + kinds, placeholder GUIDs, notes, SVG
    report = write_tree(Path("out/lab"), result.files) # atomic writes, stale files removed
"""

from ..util.hostlist import compress as hostlist
from .core import Rendered, banner, file_context, file_specs, render, render_environment, render_spec, render_text
from .guids import PLACEHOLDER_PREFIX, GuidBook, is_placeholder
from .spec import FileSpec
from .writer import WriteReport, write_tree

__all__ = [
    "PLACEHOLDER_PREFIX", "FileSpec", "GuidBook", "Rendered", "WriteReport", "banner", "file_context", "file_specs",
    "hostlist", "is_placeholder", "render", "render_environment", "render_spec", "render_text", "write_tree",
]
