"""The one Jinja2 Environment every rendered file goes through.

Templates live in `templates/<component>/<file>.j2` at the repository root (in a wheel:
package data, found by `clusterforge.util.resources`), the single source of truth shared with
the Ansible roles: they take plain variables (dicts, lists, strings, integers) built by
the `context_*` modules and hold no logic beyond loops and ifs. `CLUSTERFORGE_TEMPLATES`
points at another template tree (tests, packaging).
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from ..util.resources import data_dir

TEMPLATES_ENV_VAR = "CLUSTERFORGE_TEMPLATES"


class _Environment(Environment):
    """Jinja2's Environment, with `x.name` on a plain dict looked up as a key first.

    Jinja tries `getattr(x, "name")` before `x["name"]`, so every `e.guid` over a dict
    context raises and catches an AttributeError: a third of the time of rendering a
    2,048-node node-name-map or ibsim net file (measured). Contexts are plain dicts whose
    keys never shadow a dict method the templates call (the templates call none), so the
    output is the same as Jinja's (and Ansible's, which render the same templates).
    """

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)


def template_dir() -> Path:
    """`$CLUSTERFORGE_TEMPLATES`, else the templates shipped with clusterforge (`clusterforge.util.resources`)."""
    override = os.environ.get(TEMPLATES_ENV_VAR)
    if override:
        return Path(override)
    return data_dir("templates")


@cache
def _environment(root: str) -> Environment:
    return _Environment(
        loader=FileSystemLoader(root),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # config files, not HTML: contexts quote what each syntax needs
    )


def environment() -> Environment:
    return _environment(str(template_dir()))
