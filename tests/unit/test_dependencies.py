"""The declared runtime dependencies are the ones the code uses: nothing declared and never imported
(networkx was, and was dropped: see docs/architecture.md), nothing imported and not declared."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

USED_WITHOUT_IMPORT = {
    "ansible-core": "the Ansible engine runs ansible-playbook",
    "paramiko": "pyinfra's SSH connector, pinned (docs/deploy.md)",
}
COMES_WITH = {"gevent": "pyinfra"}  # imported, installed by a declared dependency


def _declared() -> set[str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return {re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0].lower().replace("_", "-") for d in deps}


def _extras() -> set[str]:
    """Packages of the optional extras (not `dev`): imported only where the extra is asked for, behind a clear
    error when it is missing (mitogen: deploy/ansible.mitogen_strategies)."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    return {re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0].lower().replace("_", "-")
            for name, deps in extras.items() if name != "dev" for d in deps}


def _imported() -> set[str]:
    mods: set[str] = set()
    for f in (ROOT / "src" / "clusterforge").rglob("*.py"):
        for n in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(n, ast.Import):
                mods |= {a.name.split(".")[0] for a in n.names}
            elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
                mods.add(n.module.split(".")[0])
    return {m for m in mods if m not in sys.stdlib_module_names and m != "clusterforge"}


def test_every_declared_dependency_is_used() -> None:
    dists = packages_distributions()
    used = {d.lower().replace("_", "-") for m in _imported() for d in dists.get(m, [m])}
    unused = _declared() - used - set(USED_WITHOUT_IMPORT)
    assert not unused, f"declared but never imported: {sorted(unused)}"


def test_every_imported_package_is_declared() -> None:
    dists = packages_distributions()
    declared = _declared() | _extras()
    missing = sorted(
        m for m in _imported()
        if m not in COMES_WITH and not {d.lower().replace("_", "-") for d in dists.get(m, [m])} & declared
    )
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"
    assert "networkx" not in declared
