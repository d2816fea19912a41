"""The wheel is the product: build it from the sources, install it into a fresh virtual environment and
run `init`, `check`, `plan` and `render` there, on environments outside the repository.

The fresh environment gets clusterforge from the wheel alone (`--no-deps --no-index`); its third-party
dependencies come from this test's own environment through a .pth line (nothing is downloaded). The
checkout is out of reach: the commands run from a temporary directory with no PYTHONPATH and no
CLUSTERFORGE_TEMPLATES, and the test asserts that clusterforge, its templates, roles and pyinfra entry
points are the installed copies. The files rendered from the wheel are byte-for-byte those rendered from
the checkout.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("src", "templates", "roles", "deploy", "pyproject.toml", "setup.py", "MANIFEST.in", "README.md")
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".clusterforge.lock")


def _run(argv: list[str], *, cwd: Path, env: dict[str, str] | None = None,
         timeout: int = 120) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, f"{argv} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src-copy"  # a copy: the build writes build/ and *.egg-info, never into the shared checkout
    src.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=SKIP)
        else:
            shutil.copy2(path, src / name)
    dist = tmp / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)], cwd=tmp, timeout=300)
    (wheel,) = dist.glob("clusterforge-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for expected in ("clusterforge/_data/templates/opensm/opensm.conf.j2", "clusterforge/_data/deploy/site.yml",
                     "clusterforge/_data/deploy/site.py", "clusterforge/catalog/switches.yaml",
                     "clusterforge/util/resources.py"):
        assert expected in names, f"{expected} missing from {wheel.name}"
    for tracked in _tracked("templates", "roles", "deploy"):  # every file of the three directories
        assert f"clusterforge/_data/{tracked}" in names, f"{tracked} missing from {wheel.name}"

    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp)
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
         cwd=tmp, timeout=300)
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                        cwd=tmp).stdout.strip())
    # third-party packages only: our environment's site-packages, whose editable clusterforge hook (a .pth
    # file there) is not processed from a .pth line, so `import clusterforge` finds the wheel's copy
    (purelib / "cf_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CLUSTERFORGE_TEMPLATES", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return venv, env


def test_wheel_runs_from_its_own_files(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    venv, env = installed
    cf = str(venv / "bin" / "clusterforge")
    where = json.loads(_run([str(venv / "bin" / "python"), "-c",
                             "import json, clusterforge, clusterforge.util.resources as r; "
                             "from clusterforge.deploy import ansible; "
                             "print(json.dumps({'module': clusterforge.__file__, **r.where(), "
                             "'playbook': str(ansible.PLAYBOOK), 'roles_path': str(ansible.ROLES)}))"],
                            cwd=tmp_path, env=env).stdout)
    for key, value in where.items():
        assert Path(value).is_relative_to(venv), f"{key} resolved to {value}, not inside the installed wheel"
        assert Path(value).exists(), f"{key}: {value} does not exist"
    assert (Path(where["roles"]) / "cf_base" / "tasks" / "main.yml").is_file()

    version = _run([cf, "--version"], cwd=tmp_path, env=env).stdout
    assert version.strip() == f"clusterforge {_checkout_version()}"

    # a new environment from `init`, outside the repository
    new = tmp_path / "newsite"
    _run([cf, "init", str(new)], cwd=tmp_path, env=env)
    check = json.loads(_run([cf, "check", str(new), "--format", "json"], cwd=tmp_path, env=env).stdout)
    assert check["ok"] is True and check["summary"]["nodes"] == 2
    plan = _run([cf, "plan", str(new)], cwd=tmp_path, env=env).stdout
    assert "switches: 2 leaf, 2 spine" in plan
    _run([cf, "render", str(new), "--output", str(tmp_path / "out-new")], cwd=tmp_path, env=env)
    assert (tmp_path / "out-new" / "slurm" / "topology.conf").read_text().strip()

    # the lab inventory copied out of the repository: every template it uses, rendered from the wheel,
    # equals the checkout's rendering
    lab = tmp_path / "lab"
    shutil.copytree(ROOT / "inventories" / "lab", lab, ignore=SKIP)
    _run([cf, "check", str(lab)], cwd=tmp_path, env=env)
    _run([cf, "render", str(lab), "--output", str(tmp_path / "out-wheel")], cwd=tmp_path, env=env)
    _run([str(Path(sys.executable).with_name("clusterforge")), "render", str(lab), "--output",
          str(tmp_path / "out-checkout")], cwd=ROOT)
    _same_tree(tmp_path / "out-wheel", tmp_path / "out-checkout")


def _tracked(*dirs: str) -> list[str]:
    listing = subprocess.run(["git", "ls-files", "--", *dirs], cwd=ROOT, capture_output=True, text=True, check=True)
    files = [f for f in listing.stdout.splitlines() if (ROOT / f).is_file()]
    assert len(files) > 50
    return files


def _checkout_version() -> str:
    text = (ROOT / "src" / "clusterforge" / "__init__.py").read_text()
    return text.split('__version__ = "', 1)[1].split('"', 1)[0]


def _same_tree(a: Path, b: Path) -> None:
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file() and p.name != ".clusterforge.lock")
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file() and p.name != ".clusterforge.lock")
    assert files_a == files_b and len(files_a) > 10
    _, mismatch, errors = filecmp.cmpfiles(a, b, [str(p) for p in files_a], shallow=False)
    assert not mismatch and not errors, f"rendered differently from the wheel: {mismatch + errors}"
