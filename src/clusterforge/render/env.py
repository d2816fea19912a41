"""The one Jinja2 Environment every rendered file goes through.

Templates live in `templates/<component>/<file>.j2` at the repository root, the single
source of truth shared with the Ansible roles: they take plain variables (dicts, lists,
strings, integers) built by the `context_*` modules and hold no logic beyond loops and
ifs. `CLUSTERFORGE_TEMPLATES` points at another template tree (tests, packaging).
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

TEMPLATES_ENV_VAR = "CLUSTERFORGE_TEMPLATES"


def template_dir() -> Path:
    """`$CLUSTERFORGE_TEMPLATES`, else `templates/` at the root of this checkout."""
    override = os.environ.get(TEMPLATES_ENV_VAR)
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[3] / "templates"


@cache
def _environment(root: str) -> Environment:
    return Environment(
        loader=FileSystemLoader(root),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # config files, not HTML: contexts quote what each syntax needs
    )


def environment() -> Environment:
    return _environment(str(template_dir()))
