"""Where the files clusterforge ships beside its code are: the Jinja2 templates, the Ansible roles and
playbook, the pyinfra entry points.

In a source checkout they are the top-level directories `templates/`, `roles/` and `deploy/`. A wheel
carries copies of them as package data under `clusterforge/_data/<name>/` (setup.py's build step), read
here through importlib.resources. The packaged copy wins when it is there; a checkout (or an editable
install of one) has none and uses the top-level directories. Nothing else finds these directories.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import Literal

DataDir = Literal["templates", "roles", "deploy"]
DATA_DIRS: tuple[DataDir, ...] = ("templates", "roles", "deploy")
PACKAGED = "_data"
"""The folder inside the `clusterforge` package that holds the shipped copies (a wheel only)."""


class ResourceMissing(RuntimeError):
    """Neither the package nor a checkout around it has the directory: a broken install."""


@cache
def data_dir(name: DataDir) -> Path:
    """The directory `name` (templates, roles, deploy) as a real path on disk."""
    if name not in DATA_DIRS:
        raise ValueError(f"unknown data directory {name!r}: one of {', '.join(DATA_DIRS)}")
    packaged = resources.files("clusterforge").joinpath(PACKAGED, name)
    if packaged.is_dir():
        # A wheel installed on disk: a real directory (Jinja2, Ansible and pyinfra read files by path).
        # A zip import would give no path; clusterforge is never installed zipped (it is not zip-safe).
        return Path(str(packaged))
    checkout = Path(__file__).resolve().parents[3] / name
    if checkout.is_dir():
        return checkout
    raise ResourceMissing(f"clusterforge's {name}/ directory is missing: neither {packaged} (an installed wheel) "
                          f"nor {checkout} (a source checkout) exists; reinstall clusterforge")


def where() -> dict[str, str]:
    """Every data directory and where it was found (`clusterforge --version --verbose`, tests)."""
    return {name: str(data_dir(name)) for name in DATA_DIRS}
