"""The roles as an Ansible collection: galaxy.yml builds offline, the tarball holds the roles and nothing of
the Python project, and a role installed from it stands alone (it finds cf_common inside the collection)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

import clusterforge
from clusterforge.deploy.desired import COMPONENTS

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.skipif(not (BIN / "ansible-galaxy").exists(), reason="ansible-core is not installed")


def _env(tmp: Path) -> dict[str, str]:
    # offline, and no roles path: a role can only come from the installed collection
    return dict(os.environ, ANSIBLE_ROLES_PATH=str(tmp / "no-roles"), ANSIBLE_COLLECTIONS_PATH=str(tmp / "coll"),
                ANSIBLE_GALAXY_SERVER_LIST="", ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp / "tmp"))


def _run(argv: list[str], tmp: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=_env(tmp), capture_output=True, text=True, timeout=240, check=False)


def test_galaxy_yml_names_the_project_version() -> None:
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text())
    assert (galaxy["namespace"], galaxy["name"]) == ("clusterforge", "deploy")
    assert galaxy["version"] == clusterforge.__version__


def test_collection_builds_offline_and_a_role_from_it_stands_alone(tmp_path: Path) -> None:
    built = _run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(tmp_path / "dist")],
                 tmp_path, ROOT)
    assert built.returncode == 0, built.stderr
    tarball = tmp_path / "dist" / f"clusterforge-deploy-{clusterforge.__version__}.tar.gz"
    with tarfile.open(tarball) as tar:
        names = {m.name for m in tar.getmembers() if m.isfile()}
        files = json.load(tar.extractfile("FILES.json"))  # type: ignore[arg-type]
    # the roles and meta/, nothing of the Python project (src, tests, .venv, inventories, ...)
    assert {n.split("/")[0] for n in names} == {"MANIFEST.json", "FILES.json", "meta", "roles"}
    roles = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "tasks" / "main.yml").exists())
    assert len(roles) == len(COMPONENTS) + 3  # one per component, and cf_common, cf_os, cf_retire
    assert {"cf_common", "cf_monitoring", "cf_healthcheck", "cf_hsm", "cf_retire", "cf_os", "cf_firewall"} <= set(roles)
    for role in roles:
        assert {f"roles/{role}/tasks/main.yml", f"roles/{role}/meta/argument_specs.yml",
                f"roles/{role}/README.md"} <= names
    assert "meta/runtime.yml" in {f["name"] for f in files["files"]}

    installed = _run([str(BIN / "ansible-galaxy"), "collection", "install", "--offline", str(tarball),
                      "-p", str(tmp_path / "coll")], tmp_path, tmp_path)
    assert installed.returncode == 0, installed.stderr
    dest = tmp_path / "out" / "nccl.conf"
    play = [{"name": "One role from the collection", "hosts": "localhost", "gather_facts": False,
             "connection": "local", "vars": {"ansible_python_interpreter": sys.executable},
             "roles": [{"role": "clusterforge.deploy.cf_nccl",
                        "cf_nccl_files": [{"dest": str(dest), "content": "NCCL_IB_HCA=mlx5\n", "mode": "0640",
                                           "block": False}]}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    ran = _run([str(BIN / "ansible-playbook"), "-i", "localhost,", str(tmp_path / "play.yml")], tmp_path, tmp_path)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert dest.read_text() == "NCCL_IB_HCA=mlx5\n" and (dest.stat().st_mode & 0o777) == 0o640
    assert "cf_common : Write configuration files" in ran.stdout  # the shared tasks, found in the collection
