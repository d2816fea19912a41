"""Build step: ship the top-level templates/, roles/ and deploy/ inside the wheel.

They stay where they are in the repository (the roles and the pyinfra entry points are used from a
checkout as they are); the wheel carries copies under `clusterforge/_data/<name>/`, which
`clusterforge.util.resources` finds. Everything else is declared in pyproject.toml.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
DATA_DIRS = ("templates", "roles", "deploy")  # == clusterforge.util.resources.DATA_DIRS
SKIP = {"__pycache__", ".ansible", ".pytest_cache"}


class BuildPyWithData(build_py):
    """build_py, then templates/ roles/ deploy/ copied to <build_lib>/clusterforge/_data/."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout's own directories
        for name in DATA_DIRS:
            src = ROOT / name
            if not src.is_dir():
                raise SystemExit(f"setup.py: {src} is missing: build from a checkout or an sdist of clusterforge")
            for path in sorted(src.rglob("*")):
                rel = path.relative_to(src)
                if path.is_dir() or SKIP.intersection(rel.parts) or path.suffix == ".pyc":
                    continue
                dest = Path(self.build_lib, "clusterforge", "_data", name, rel)
                self.mkpath(str(dest.parent))
                self.copy_file(str(path), str(dest), preserve_mode=True)


setup(cmdclass={"build_py": BuildPyWithData})
